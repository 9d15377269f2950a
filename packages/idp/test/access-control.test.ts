import { ACCESS_RULES, requireAccessRules, routeAccess } from '@mcp-identity/idp';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { ALL_SCOPES, createUserWithRole, signIn, startTestIdp, userBody } from './helpers.js';

const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const BULK = 'urn:ietf:params:scim:api:messages:2.0:BulkRequest';

describe('SCIM access is decided on the matched route', async () => {
  const idp = await startTestIdp();
  let sequence = 0;
  const next = (prefix: string) => `${prefix}${++sequence}x`;
  const newUser = async () =>
    (await idp.scim('POST', '/Users', { body: userBody(next('u')) })).body.id as string;

  it('every route the IdP registers has an access rule', () => {
    expect(idp.routes.length).toBeGreaterThan(40);
    for (const route of idp.routes) {
      const [method, url] = route.split(' ') as [string, string];
      expect(routeAccess(method, url), route).toBeDefined();
    }
    // Every SCIM rule names a route that exists, so no rule is dead.
    for (const rule of ACCESS_RULES) {
      for (const method of rule.methods) expect(idp.routes).toContain(`${method} ${rule.route}`);
    }
  });

  it('cannot register a route without an access rule', async () => {
    const app = Fastify();
    requireAccessRules(app);
    app.get('/oauth2/jwks', async () => ({}));
    expect(() => app.get('/scim2/Users/:id/secrets', async () => ({}))).toThrow(
      'IdP route GET /scim2/Users/:id/secrets has no access rule',
    );
    await app.close();
  });

  it('refuses a scopeless token on percent-encoded SCIM paths', async () => {
    const noScope = await idp.token([]);
    const userId = await newUser();
    const roleId = (await idp.scim('POST', '/v2/Roles', { body: { displayName: next('r') } })).body
      .id as string;
    const attempts: [string, string, unknown?][] = [
      ['DELETE', `/%55sers/${userId}`],
      ['GET', `/%55sers/${userId}`],
      ['GET', '/%55sers'],
      ['HEAD', '/%55sers'],
      ['POST', '/%55sers', userBody(next('u'))],
      ['POST', '/%47roups', { displayName: next('g') }],
      ['GET', '/%47roups'],
      ['POST', '/v2/%52oles', { displayName: next('r') }],
      ['DELETE', `/v2/Ro%6Ces/${roleId}`],
      ['GET', '/%41gents'],
      ['POST', '/%41gents', { 'urn:scim:wso2:agent:schema': { DisplayName: 'x' } }],
      ['POST', '/%42ulk', { schemas: [BULK], Operations: [] }],
    ];
    for (const [method, path, body] of attempts) {
      const response = await idp.scim(method, path, { token: noScope, body });
      expect(response.status, `${method} ${path}`).toBe(403);
    }
    expect((await idp.scim('GET', `/Users/${userId}`)).status).toBe(200);
    expect((await idp.scim('GET', `/v2/Roles/${roleId}`)).status).toBe(200);
  });

  it('refuses a plain user who registered a client anonymously to grant themselves roles', async () => {
    const userName = next('plain');
    const password = 'Plain-pass1';
    const { userId } = await createUserWithRole(idp, userName, password, []);
    const tokens = await signIn(idp, { userName, password }, ALL_SCOPES.join(' '));
    expect(tokens.scope).toBe('internal_login');
    const everything = {
      displayName: next('escalate'),
      permissions: ALL_SCOPES.map((value) => ({ value })),
      users: [{ value: userId }],
    };
    for (const path of ['/v2/Roles', '/v2/%52oles']) {
      const response = await idp.scim('POST', path, {
        token: tokens.access_token,
        body: everything,
      });
      expect(response.status, path).toBe(403);
    }
    const bulk = await idp.scim('POST', '/Bulk', {
      token: tokens.access_token,
      body: {
        schemas: [BULK],
        Operations: [{ method: 'POST', path: '/v2/Roles', bulkId: 'r', data: everything }],
      },
    });
    expect(bulk.status).toBe(403);
    expect(idp.admin.service.roles.permissionsOfUser(userId).size).toBe(0);
  });

  describe('granting what the caller does not hold needs the role-management scope', async () => {
    const adminRole = (
      await idp.scim('POST', '/v2/Roles', {
        body: { displayName: 'all-powers', permissions: ALL_SCOPES.map((value) => ({ value })) },
      })
    ).body.id as string;
    const readRole = (
      await idp.scim('POST', '/v2/Roles', {
        body: { displayName: 'readers', permissions: [{ value: 'internal_user_mgt_list' }] },
      })
    ).body.id as string;
    const addUser = (userId: string) => ({
      schemas: [PATCH_OP],
      Operations: [{ op: 'add', path: 'users', value: [{ value: userId }] }],
    });
    /** A token of an application authorized for exactly `scopes`: it holds nothing else. */
    const delegateToken = async (scopes: string[]) => {
      const clientId = next('delegate');
      const { clientSecret } = await idp.admin.apps.create({ name: clientId, clientId, scopes });
      const response = await fetch(`${idp.url}/oauth2/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope: scopes.join(' ') }),
      });
      return ((await response.json()) as { access_token: string }).access_token;
    };

    it('Roles PATCH users: only roles whose permissions the caller holds', async () => {
      const token = await delegateToken([
        'internal_role_mgt_users_update',
        'internal_user_mgt_list',
      ]);
      const userId = await newUser();
      const escalate = await idp.scim('PATCH', `/v2/Roles/${adminRole}`, {
        token,
        body: addUser(userId),
      });
      expect(escalate.status).toBe(403);
      const allowed = await idp.scim('PATCH', `/v2/Roles/${readRole}`, {
        token,
        body: addUser(userId),
      });
      expect(allowed.status).toBe(200);
      expect([...idp.admin.service.roles.permissionsOfUser(userId)]).toEqual([
        'internal_user_mgt_list',
      ]);
      const manager = await delegateToken(['internal_role_mgt_update']);
      expect(
        (
          await idp.scim('PATCH', `/v2/Roles/${adminRole}`, {
            token: manager,
            body: addUser(userId),
          })
        ).status,
      ).toBe(200);
      // An application that holds every permission may delegate with the operation scope alone
      // (assign_role_to_user's anyOf rule).
      const backend = await idp.token(['internal_role_mgt_users_update']);
      const other = await newUser();
      expect(
        (
          await idp.scim('PATCH', `/v2/Roles/${adminRole}`, {
            token: backend,
            body: addUser(other),
          })
        ).status,
      ).toBe(200);
    });

    it('Roles POST and PATCH permissions with operation scopes: only permissions held', async () => {
      const token = await delegateToken([
        'internal_role_mgt_permissions_update',
        'internal_user_mgt_list',
      ]);
      const create = (permission: string) =>
        idp.scim('POST', '/v2/Roles', {
          token,
          body: { displayName: next('r'), permissions: [{ value: permission }] },
        });
      expect((await create('internal_user_mgt_delete')).status).toBe(403);
      expect((await create('internal_user_mgt_list')).status).toBe(201);
      const patch = await idp.scim('PATCH', `/v2/Roles/${readRole}`, {
        token,
        body: {
          schemas: [PATCH_OP],
          Operations: [
            { op: 'add', path: 'permissions', value: [{ value: 'internal_user_mgt_delete' }] },
          ],
        },
      });
      expect(patch.status).toBe(403);
      // The role-management scope of the change is what lets a caller grant beyond itself.
      const creator = await delegateToken(['internal_role_mgt_create']);
      const created = await idp.scim('POST', '/v2/Roles', {
        token: creator,
        body: { displayName: next('r'), permissions: [{ value: 'internal_user_mgt_delete' }] },
      });
      expect(created.status).toBe(201);
    });

    it('Groups PATCH members: not into a group that carries roles beyond the caller', async () => {
      const group = (await idp.scim('POST', '/Groups', { body: { displayName: next('g') } })).body
        .id as string;
      await idp.scim('PATCH', `/v2/Roles/${adminRole}`, {
        body: {
          schemas: [PATCH_OP],
          Operations: [{ op: 'add', path: 'groups', value: [{ value: group }] }],
        },
      });
      const plainGroup = (await idp.scim('POST', '/Groups', { body: { displayName: next('g') } }))
        .body.id as string;
      const userName = next('m');
      const userId = (await idp.scim('POST', '/Users', { body: userBody(userName) })).body
        .id as string;
      const token = await delegateToken(['internal_group_mgt_update']);
      const join = (id: string) =>
        idp.scim('PATCH', `/Groups/${id}`, {
          token,
          body: {
            schemas: [PATCH_OP],
            Operations: [
              { op: 'add', path: 'members', value: [{ value: userId, display: userName }] },
            ],
          },
        });
      expect((await join(group)).status).toBe(403);
      expect((await join(plainGroup)).status).toBe(200);
      expect(idp.admin.service.roles.permissionsOfUser(userId).size).toBe(0);
    });

    it('Bulk: a role operation grants only what the caller holds', async () => {
      const token = await delegateToken(['internal_bulk_resource_create']);
      const response = await idp.scim('POST', '/Bulk', {
        token,
        body: {
          schemas: [BULK],
          Operations: [
            {
              method: 'POST',
              path: '/v2/Roles',
              bulkId: 'r1',
              data: {
                displayName: next('r'),
                permissions: [{ value: 'internal_user_mgt_delete' }],
              },
            },
            { method: 'PATCH', path: `/v2/Roles/${adminRole}`, data: addUser(await newUser()) },
          ],
        },
      });
      expect(response.status).toBe(200);
      const results = response.body.Operations as { status: string }[];
      expect(results.map((r) => r.status)).toEqual(['403', '403']);
    });

    it('Users PUT and PATCH cannot assign roles or groups', async () => {
      const userId = await newUser();
      const token = await idp.token(['internal_user_mgt_update']);
      await idp.scim('PATCH', `/Users/${userId}`, {
        token,
        body: {
          schemas: [PATCH_OP],
          Operations: [{ op: 'add', value: { roles: [{ value: adminRole }] } }],
        },
      });
      expect(idp.admin.service.roles.permissionsOfUser(userId).size).toBe(0);
    });
  });
});
