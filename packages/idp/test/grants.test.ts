import { describe, expect, it } from 'vitest';
import {
  ADMIN_CLIENT,
  createUserWithRole,
  signIn,
  startTestIdp,
  type TestIdp,
  tokenRequest,
} from './helpers.js';

const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const LIST = 'internal_user_mgt_list';
const VIEW = 'internal_user_mgt_view';

const introspect = async (idp: TestIdp, token: string) => {
  const response = await fetch(`${idp.url}/oauth2/introspect`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${ADMIN_CLIENT.clientId}:${ADMIN_CLIENT.clientSecret}`).toString('base64')}`,
    },
    body: new URLSearchParams({ token }),
  });
  return (await response.json()) as { active: boolean; scope?: string };
};

const refresh = (idp: TestIdp, clientId: string, refreshToken: string, scope?: string) =>
  tokenRequest(idp, {
    grant_type: 'refresh_token',
    refresh_token: refreshToken,
    client_id: clientId,
    ...(scope ? { scope } : {}),
  });

describe('grants are re-checked against the user', async () => {
  const idp = await startTestIdp();
  let sequence = 0;
  const newSignedInUser = async (
    permissions: string[],
    scope = `${LIST} ${VIEW} internal_login`,
  ) => {
    const userName = `g${++sequence}user`;
    const password = 'Grant-pass1';
    const { userId, roleId } = await createUserWithRole(idp, userName, password, permissions);
    const tokens = await signIn(idp, { userName, password }, scope);
    return { userId, roleId, tokens };
  };
  const setActive = (userId: string, active: boolean) =>
    idp.scim('PATCH', `/Users/${userId}`, {
      body: { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: active }] },
    });

  it('refresh fails once the user is deleted, and their refresh tokens are revoked', async () => {
    const { userId, tokens } = await newSignedInUser([LIST]);
    expect((await idp.scim('DELETE', `/Users/${userId}`)).status).toBe(204);
    expect(await introspect(idp, tokens.refresh_token)).toEqual({ active: false });
    const response = await refresh(idp, tokens.clientId, tokens.refresh_token);
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('invalid_grant');
    expect((await idp.scim('GET', '/Me', { token: tokens.access_token })).status).toBe(401);
  });

  it('a disabled user can neither refresh nor use their access token, nor re-enable themselves', async () => {
    const { userId, tokens } = await newSignedInUser([LIST]);
    expect((await setActive(userId, false)).status).toBe(200);
    expect(await introspect(idp, tokens.refresh_token)).toEqual({ active: false });
    expect(await introspect(idp, tokens.access_token)).toEqual({ active: false });
    const refreshed = await refresh(idp, tokens.clientId, tokens.refresh_token);
    expect(refreshed.body.error).toBe('invalid_grant');
    const reenable = await idp.scim('PATCH', '/Me', {
      token: tokens.access_token,
      body: { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: true }] },
    });
    expect(reenable.status).toBe(401);
    expect((await idp.scim('GET', '/Me', { token: tokens.access_token })).status).toBe(401);
    expect((await idp.scim('GET', `/Users/${userId}`)).body.active).toBe(false);

    // Re-enabled by an administrator, the user signs in again; old grants stay dead.
    expect((await setActive(userId, true)).status).toBe(200);
    expect((await refresh(idp, tokens.clientId, tokens.refresh_token)).status).toBe(400);
  });

  it('refresh narrows the scopes to the current roles and never widens them', async () => {
    const { roleId, tokens } = await newSignedInUser([LIST, VIEW]);
    expect(tokens.scope).toBe(`${LIST} ${VIEW} internal_login`);
    const setPermissions = (permissions: string[]) =>
      idp.scim('PATCH', `/v2/Roles/${roleId}`, {
        body: {
          schemas: [PATCH_OP],
          Operations: [
            { op: 'replace', path: 'permissions', value: permissions.map((value) => ({ value })) },
          ],
        },
      });
    expect((await setPermissions([LIST])).status).toBe(200);
    const narrowed = await refresh(idp, tokens.clientId, tokens.refresh_token);
    expect(narrowed.status).toBe(200);
    expect(narrowed.body.scope).toBe(`${LIST} internal_login`);
    expect((await introspect(idp, narrowed.body.access_token!)).scope).toBe(
      `${LIST} internal_login`,
    );

    expect((await setPermissions([LIST, VIEW])).status).toBe(200);
    const again = await refresh(idp, tokens.clientId, narrowed.body.refresh_token!);
    expect(again.body.scope).toBe(`${LIST} internal_login`);
    const wider = await refresh(idp, tokens.clientId, again.body.refresh_token!, `${LIST} ${VIEW}`);
    expect(wider.body.error).toBe('invalid_scope');
  });

  it('/Me cannot change administrative attributes', async () => {
    const { userId, tokens } = await newSignedInUser([LIST]);
    const patch = (operations: unknown[]) =>
      idp.scim('PATCH', '/Me', {
        token: tokens.access_token,
        body: { schemas: [PATCH_OP], Operations: operations },
      });
    for (const operation of [
      { op: 'replace', path: 'active', value: false },
      { op: 'add', path: 'roles', value: [{ value: 'x' }] },
      { op: 'add', path: 'groups', value: [{ value: 'x' }] },
      { op: 'replace', value: { active: false } },
      {
        op: 'replace',
        path: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department',
        value: 'Board',
      },
      { op: 'replace', path: 'urn:ietf:params:scim:schemas:core:2.0:User:active', value: false },
    ]) {
      const response = await patch([operation]);
      expect(response.status, JSON.stringify(operation)).toBe(400);
      expect(response.body.scimType).toBe('mutability');
    }
    const own = await patch([{ op: 'replace', path: 'name.givenName', value: 'Renamed' }]);
    expect(own.status).toBe(200);

    const current = await idp.scim('GET', '/Me', { token: tokens.access_token });
    const put = await idp.scim('PUT', '/Me', {
      token: tokens.access_token,
      body: {
        ...current.body,
        active: false,
        'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User': { department: 'Board' },
        nickName: 'nick',
      },
    });
    expect(put.status).toBe(200);
    const after = await idp.scim('GET', `/Users/${userId}`);
    expect(after.body.active).not.toBe(false);
    expect(after.body.nickName).toBe('nick');
    expect(
      after.body['urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'],
    ).toBeUndefined();
  });
});

describe('replays revoke what the replayed credential produced', async () => {
  const idp = await startTestIdp();
  await createUserWithRole(idp, 'replayer', 'Replay-pass1', [LIST]);
  const credentials = { userName: 'replayer', password: 'Replay-pass1' };

  it('presenting a rotated refresh token revokes the whole family', async () => {
    const first = await signIn(idp, credentials, LIST);
    const second = await refresh(idp, first.clientId, first.refresh_token);
    expect(second.status).toBe(200);
    const reuse = await refresh(idp, first.clientId, first.refresh_token);
    expect(reuse.body.error).toBe('invalid_grant');
    expect((await refresh(idp, first.clientId, second.body.refresh_token!)).body.error).toBe(
      'invalid_grant',
    );
    expect(await introspect(idp, second.body.access_token!)).toEqual({ active: false });
    expect(await introspect(idp, first.access_token)).toEqual({ active: false });

    // Another sign-in of the same user is another family, untouched.
    const other = await signIn(idp, credentials, LIST);
    expect((await refresh(idp, other.clientId, other.refresh_token)).status).toBe(200);
  });

  it('a replayed authorization code revokes the tokens of its first redemption', async () => {
    const first = await signIn(idp, credentials, LIST);
    const replay = await tokenRequest(idp, {
      grant_type: 'authorization_code',
      code: first.code,
      client_id: first.clientId,
      redirect_uri: 'http://127.0.0.1:8765/callback',
      code_verifier: first.verifier,
    });
    expect(replay.body.error).toBe('invalid_grant');
    expect(await introspect(idp, first.access_token)).toEqual({ active: false });
    expect((await refresh(idp, first.clientId, first.refresh_token)).body.error).toBe(
      'invalid_grant',
    );
  });
});
