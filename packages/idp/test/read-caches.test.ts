import { useTempDir } from '@mcp-identity/common/testing';
import { openIdpData } from '@mcp-identity/idp';
import { decodeProtectedHeader } from 'jose';
import { describe, expect, it } from 'vitest';
import { runIdpCommand, startTestIdp, userBody } from './helpers.js';

const SEARCH = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

/**
 * The IdP keeps what it read for the token endpoint and for searches (signing key, applications,
 * narrow search matches, pages of users, their groups and roles) until the database changes.
 * Every write must be seen by the very next request, whether the server made it or another
 * process did (`idp keys rotate`, `idp apps …`: another SQLite connection, as here).
 */
describe('cached reads never outlive the rows they reflect', async () => {
  const dataDir = useTempDir('idp-read-caches-')();
  const idp = await startTestIdp({ dataDir });
  const elsewhere = () => openIdpData(dataDir, { create: false });

  const tokenFor = async (clientId: string, secret: string) => {
    const response = await fetch(`${idp.url}/oauth2/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}`,
      },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        scope: 'internal_user_mgt_list internal_user_mgt_view',
      }),
    });
    const body = (await response.json()) as { access_token?: string; scope?: string };
    return { status: response.status, ...body };
  };
  const search = async (filter: string) => {
    const response = await idp.scim('POST', '/Users/.search', {
      body: { schemas: [SEARCH], filter, count: 10 },
    });
    expect(response.status).toBe(200);
    return response.body.Resources as
      | {
          userName: string;
          name?: { givenName?: string };
          groups?: { display: string }[];
          roles?: { display: string }[];
        }[]
      | undefined;
  };

  it('a key rotated by another process signs the next token, and the old key still verifies', async () => {
    const { clientId, secret } = { clientId: 'admin-app', secret: 'admin-secret-value' };
    const before = await tokenFor(clientId, secret);
    const data = elsewhere();
    const kid = await data.keys.rotate();
    data.close();
    const after = await tokenFor(clientId, secret);
    expect(decodeProtectedHeader(after.access_token!).kid).toBe(kid);
    expect(decodeProtectedHeader(before.access_token!).kid).not.toBe(kid);
    for (const token of [before.access_token!, after.access_token!]) {
      expect((await idp.scim('GET', '/Users?count=1', { token })).status).toBe(200);
    }
    // Rotated by the server itself.
    const own = await idp.admin.keys.rotate();
    expect(decodeProtectedHeader((await tokenFor(clientId, secret)).access_token!).kid).toBe(own);
  });

  it('a secret rotated, scopes changed or an application deleted by another process apply at once', async () => {
    const { app, clientSecret } = await idp.admin.apps.create({
      name: 'cached-client',
      scopes: ['internal_user_mgt_list', 'internal_user_mgt_view'],
    });
    const first = await tokenFor(app.clientId, clientSecret!);
    expect(first.status).toBe(200);
    expect(first.scope).toBe('internal_user_mgt_list internal_user_mgt_view');

    let data = elsewhere();
    const rotated = await data.apps.rotateSecret(app.clientId);
    data.apps.update(app.clientId, { name: app.name, scopes: ['internal_user_mgt_list'] });
    data.close();
    expect((await tokenFor(app.clientId, clientSecret!)).status).toBe(401);
    const second = await tokenFor(app.clientId, rotated);
    expect(second.status).toBe(200);
    expect(second.scope).toBe('internal_user_mgt_list');

    data = elsewhere();
    data.apps.delete(app.clientId);
    data.close();
    expect((await tokenFor(app.clientId, rotated)).status).toBe(401);
  });

  it('an application deleted by the idp command in another process is refused at the next request', async () => {
    const { app, clientSecret } = await idp.admin.apps.create({
      name: 'deleted-elsewhere',
      scopes: ['internal_user_mgt_list'],
    });
    for (let i = 0; i < 3; i++) {
      expect((await tokenFor(app.clientId, clientSecret!)).status).toBe(200);
    }
    const { code } = await runIdpCommand(['apps', 'delete', app.clientId, '--data-dir', dataDir]);
    expect(code).toBe(0);
    expect((await tokenFor(app.clientId, clientSecret!)).status).toBe(401);
  });

  it('a repeated narrow search sees every user, group and role written since', async () => {
    const filter = 'userName sw "cachedsearch"';
    const created = await idp.scim('POST', '/Users', { body: userBody('cachedsearch-a') });
    expect(created.status).toBe(201);
    const userId = created.body.id as string;
    expect((await search(filter))?.map((u) => u.userName)).toEqual(['cachedsearch-a']);

    // Written by the server: a second user, a profile change, a group membership.
    const second = await idp.scim('POST', '/Users', { body: userBody('cachedsearch-b') });
    expect((await search(filter))?.map((u) => u.userName).sort()).toEqual([
      'cachedsearch-a',
      'cachedsearch-b',
    ]);
    await idp.scim('PATCH', `/Users/${userId}`, {
      body: {
        schemas: [PATCH_OP],
        Operations: [{ op: 'replace', path: 'name.givenName', value: 'Renamed' }],
      },
    });
    const group = await idp.scim('POST', '/Groups', { body: { displayName: 'cache-group' } });
    await idp.scim('PATCH', `/Groups/${group.body.id}`, {
      body: {
        schemas: [PATCH_OP],
        Operations: [{ op: 'add', path: 'members', value: [{ value: userId }] }],
      },
    });
    let found = (await search(filter))?.find((u) => u.userName === 'cachedsearch-a');
    expect(found?.name?.givenName).toBe('Renamed');
    expect(found?.groups?.map((g) => g.display)).toEqual(['cache-group']);

    // Written by another process: a third user, then (the same page read again) a role and a
    // profile change of the first.
    let data = elsewhere();
    await data.service.createUser('user', userBody('cachedsearch-c'));
    data.close();
    expect((await search(filter))?.map((u) => u.userName).sort()).toEqual([
      'cachedsearch-a',
      'cachedsearch-b',
      'cachedsearch-c',
    ]);
    data = elsewhere();
    data.service.createRole(
      { displayName: 'cache-role', users: [{ value: userId }] },
      { granted: true, scopes: new Set(), held: new Set(['*']) },
    );
    await data.service.patchUser('user', userId, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', path: 'name.givenName', value: 'Elsewhere' }],
    });
    data.close();
    found = (await search(filter))?.find((u) => u.userName === 'cachedsearch-a');
    expect(found?.roles?.map((r) => r.display)).toEqual(['cache-role']);
    expect(found?.name?.givenName).toBe('Elsewhere');

    // Deleted by the server.
    expect((await idp.scim('DELETE', `/Users/${second.body.id}`)).status).toBe(204);
    expect((await search(filter))?.map((u) => u.userName).sort()).toEqual([
      'cachedsearch-a',
      'cachedsearch-c',
    ]);
  });

  it('a token revoked after its last use is refused at once, also past the revocations held in memory', async () => {
    const revoke = async (token: string) => {
      const response = await fetch(`${idp.url}/oauth2/revoke`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from('admin-app:admin-secret-value').toString('base64')}`,
        },
        body: new URLSearchParams({ token }),
      });
      expect(response.status).toBe(200);
    };
    const status = async (token: string) =>
      (await idp.scim('GET', '/Users?count=1', { token })).status;
    const token = await idp.token(['internal_user_mgt_list']);
    expect(await status(token)).toBe(200);
    await revoke(token);
    expect(await status(token)).toBe(401);

    // More revoked tokens than the IdP holds in memory (256): each is looked up instead.
    const many = await Promise.all(
      Array.from({ length: 260 }, () => idp.token(['internal_user_mgt_list'])),
    );
    for (const each of many.slice(0, 259)) await revoke(each);
    const kept = many[259]!;
    expect(await status(kept)).toBe(200);
    await revoke(kept);
    expect(await status(kept)).toBe(401);
    expect(await status(many[0]!)).toBe(401);
    expect(await status(await idp.token(['internal_user_mgt_list']))).toBe(200);
  });
});
