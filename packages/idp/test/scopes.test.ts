import { generateKeyPair, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { ALL_SCOPES, startTestIdp, userBody } from './helpers.js';

const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const FORBIDDEN = {
  schemas: [ERROR],
  detail: 'Operation is not permitted. You do not have permissions to make this request.',
  status: 403,
};
const UNAUTHORIZED = {
  schemas: [ERROR],
  detail:
    'Authorization failure. Authorization information was invalid or missing from your request.',
  status: 401,
};
const SEARCH = {
  schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'],
  filter: 'userName sw a',
};
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

describe('scope matrix (WSO2 resource-access-control-v2.xml)', async () => {
  const idp = await startTestIdp();
  let sequence = 0;
  const next = () => `u${++sequence}x`;
  const newUser = async () =>
    (await idp.scim('POST', '/Users', { body: userBody(next()) })).body.id as string;
  const newGroup = async () =>
    (await idp.scim('POST', '/Groups', { body: { displayName: `g-${next()}` } })).body.id as string;
  const newRole = async () =>
    (await idp.scim('POST', '/v2/Roles', { body: { displayName: `r-${next()}` } })).body
      .id as string;
  const newAgent = async () =>
    (
      await idp.scim('POST', '/Agents', {
        body: { 'urn:scim:wso2:agent:schema': { DisplayName: 'A', Owner: 'owner' } },
      })
    ).body.id as string;

  type Case = {
    method: string;
    path: () => Promise<string>;
    body?: () => unknown;
    scope: string;
    /** Operation scopes that would also let the request through the valve. */
    alsoWithout?: string[];
    ok: number;
  };
  const cases: Case[] = [
    { method: 'GET', path: async () => '/Users', scope: 'internal_user_mgt_list', ok: 200 },
    {
      method: 'POST',
      path: async () => '/Users/.search',
      body: () => SEARCH,
      scope: 'internal_user_mgt_list',
      ok: 200,
    },
    {
      method: 'POST',
      path: async () => '/Users',
      body: () => userBody(next()),
      scope: 'internal_user_mgt_create',
      ok: 201,
    },
    {
      method: 'GET',
      path: async () => `/Users/${await newUser()}`,
      scope: 'internal_user_mgt_view',
      ok: 200,
    },
    {
      method: 'PATCH',
      path: async () => `/Users/${await newUser()}`,
      body: () => ({
        schemas: [PATCH_OP],
        Operations: [{ op: 'replace', path: 'active', value: false }],
      }),
      scope: 'internal_user_mgt_update',
      ok: 200,
    },
    {
      method: 'PUT',
      path: async () => {
        const id = await newUser();
        return `/Users/${id}`;
      },
      body: () => ({ userName: `u${sequence}x` }),
      scope: 'internal_user_mgt_update',
      ok: 200,
    },
    {
      method: 'DELETE',
      path: async () => `/Users/${await newUser()}`,
      scope: 'internal_user_mgt_delete',
      ok: 204,
    },
    { method: 'GET', path: async () => '/Groups', scope: 'internal_group_mgt_view', ok: 200 },
    {
      method: 'POST',
      path: async () => '/Groups/.search',
      body: () => ({ schemas: [SEARCH.schemas[0]] }),
      scope: 'internal_group_mgt_view',
      ok: 200,
    },
    {
      method: 'POST',
      path: async () => '/Groups',
      body: () => ({ displayName: `g-${next()}` }),
      scope: 'internal_group_mgt_create',
      ok: 201,
    },
    {
      method: 'GET',
      path: async () => `/Groups/${await newGroup()}`,
      scope: 'internal_group_mgt_view',
      ok: 200,
    },
    {
      method: 'PATCH',
      path: async () => `/Groups/${await newGroup()}`,
      body: () => ({
        schemas: [PATCH_OP],
        Operations: [{ op: 'replace', path: 'displayName', value: `g-${next()}` }],
      }),
      scope: 'internal_group_mgt_update',
      ok: 200,
    },
    {
      method: 'DELETE',
      path: async () => `/Groups/${await newGroup()}`,
      scope: 'internal_group_mgt_delete',
      ok: 204,
    },
    { method: 'GET', path: async () => '/v2/Roles', scope: 'internal_role_mgt_view', ok: 200 },
    {
      method: 'GET',
      path: async () => `/v2/Roles/${await newRole()}`,
      scope: 'internal_role_mgt_view',
      ok: 200,
    },
    {
      method: 'POST',
      path: async () => '/v2/Roles/.search',
      body: () => ({ schemas: [SEARCH.schemas[0]] }),
      scope: 'internal_role_mgt_view',
      ok: 200,
    },
    {
      method: 'POST',
      path: async () => '/v2/Roles',
      body: () => ({ displayName: `r-${next()}` }),
      scope: 'internal_role_mgt_create',
      alsoWithout: [
        'internal_role_mgt_permissions_update',
        'internal_role_mgt_users_update',
        'internal_role_mgt_groups_update',
      ],
      ok: 201,
    },
    {
      method: 'PATCH',
      path: async () => `/v2/Roles/${await newRole()}`,
      body: () => ({
        schemas: [PATCH_OP],
        Operations: [{ op: 'replace', path: 'displayName', value: `r-${next()}` }],
      }),
      scope: 'internal_role_mgt_update',
      alsoWithout: [
        'internal_role_mgt_permissions_update',
        'internal_role_mgt_users_update',
        'internal_role_mgt_groups_update',
      ],
      ok: 200,
    },
    {
      method: 'DELETE',
      path: async () => `/v2/Roles/${await newRole()}`,
      scope: 'internal_role_mgt_delete',
      ok: 204,
    },
    { method: 'GET', path: async () => '/Agents', scope: 'internal_agent_mgt_list', ok: 200 },
    {
      method: 'POST',
      path: async () => '/Agents/.search',
      body: () => ({ schemas: [SEARCH.schemas[0]] }),
      scope: 'internal_agent_mgt_list',
      ok: 200,
    },
    {
      method: 'POST',
      path: async () => '/Agents',
      body: () => ({ 'urn:scim:wso2:agent:schema': { DisplayName: 'x', Owner: 'owner' } }),
      scope: 'internal_agent_mgt_create',
      ok: 201,
    },
    {
      method: 'GET',
      path: async () => `/Agents/${await newAgent()}`,
      scope: 'internal_agent_mgt_view',
      ok: 200,
    },
    {
      method: 'PATCH',
      path: async () => `/Agents/${await newAgent()}`,
      body: () => ({
        schemas: [PATCH_OP],
        Operations: [{ op: 'replace', path: 'active', value: false }],
      }),
      scope: 'internal_agent_mgt_update',
      ok: 200,
    },
    {
      method: 'DELETE',
      path: async () => `/Agents/${await newAgent()}`,
      scope: 'internal_agent_mgt_delete',
      ok: 204,
    },
    {
      method: 'POST',
      path: async () => '/Bulk',
      body: () => ({
        schemas: ['urn:ietf:params:scim:api:messages:2.0:BulkRequest'],
        Operations: [],
      }),
      scope: 'internal_bulk_resource_create',
      alsoWithout: ALL_SCOPES.filter((s) => s.startsWith('internal_bulk_')),
      ok: 200,
    },
  ];

  it.each(cases.map((c) => [`${c.method} ${c.scope}`, c] as const))(
    '%s: 403 without the scope, success with only it',
    async (_name, c) => {
      const excluded = new Set([c.scope, ...(c.alsoWithout ?? [])]);
      const lacking = await idp.token(ALL_SCOPES.filter((s) => !excluded.has(s)));
      const denied = await idp.scim(c.method, await c.path(), { token: lacking, body: c.body?.() });
      expect(denied.status).toBe(403);
      expect(denied.headers.get('content-type')).toBe('application/json;charset=UTF-8');
      expect(denied.body).toEqual(FORBIDDEN);

      const only = await idp.token([c.scope]);
      const allowed = await idp.scim(c.method, await c.path(), { token: only, body: c.body?.() });
      expect(allowed.status).toBe(c.ok);
    },
  );

  it('Schemas need any valid token; ServiceProviderConfig and ResourceTypes none', async () => {
    expect((await idp.scim('GET', '/Schemas', { token: '' })).status).toBe(401);
    expect((await idp.scim('GET', '/Schemas', { token: await idp.token([]) })).status).toBe(200);
    expect((await idp.scim('GET', '/ServiceProviderConfig', { token: '' })).status).toBe(200);
    expect((await idp.scim('GET', '/ResourceTypes', { token: '' })).status).toBe(200);
  });

  it('answers 401 with the valve body for missing, malformed and foreign tokens', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    const foreign = await new SignJWT({ scope: ALL_SCOPES.join(' '), client_id: 'x', jti: 'j' })
      .setProtectedHeader({ alg: 'RS256', kid: 'other' })
      .setIssuer(idp.issuer)
      .setAudience('x')
      .setSubject('x')
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(privateKey);
    for (const token of ['', 'not-a-jwt', foreign]) {
      const response = await idp.scim('GET', '/Users', { token });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
      expect(response.body).toEqual(UNAUTHORIZED);
    }
  });

  describe('role operation scopes (users, groups, permissions of a role write)', async () => {
    const userId = await newUser();
    const roleId = await newRole();
    const assign = (token: string, path = 'users') =>
      idp.scim('PATCH', `/v2/Roles/${roleId}`, {
        token,
        body: {
          schemas: [PATCH_OP],
          Operations: [
            path === 'users'
              ? { op: 'add', path: 'users', value: [{ value: userId }] }
              : { op: 'add', path: 'permissions', value: [{ value: 'internal_login' }] },
          ],
        },
      });

    it('accepts internal_role_mgt_users_update alone for user assignment', async () => {
      const response = await assign(await idp.token(['internal_role_mgt_users_update']));
      expect(response.status).toBe(200);
      expect(response.body.users).toEqual([expect.objectContaining({ value: userId })]);
    });

    it('accepts internal_role_mgt_update alone for user assignment', async () => {
      expect((await assign(await idp.token(['internal_role_mgt_update']))).status).toBe(200);
    });

    it('refuses other sections with only the users operation scope (SCIM error shape)', async () => {
      const response = await assign(
        await idp.token(['internal_role_mgt_users_update']),
        'permissions',
      );
      expect(response.status).toBe(403);
      expect(response.headers.get('content-type')).toBe('application/scim+json');
      expect(response.body).toEqual({ ...FORBIDDEN, status: '403' });
    });
  });
});

describe('token expiry', async () => {
  let clock = Date.now();
  const idp = await startTestIdp({ clock: () => clock });

  it('refuses an expired token with 401', async () => {
    const token = await idp.token(['internal_user_mgt_list']);
    expect((await idp.scim('GET', '/Users', { token })).status).toBe(200);
    clock += 3601_000;
    expect((await idp.scim('GET', '/Users', { token })).status).toBe(401);
  });

  it('stops publishing a retired key once its tokens have expired', async () => {
    const kids = async () =>
      (
        (await (await fetch(`${idp.url}/oauth2/jwks`)).json()) as { keys: { kid: string }[] }
      ).keys.map((k) => k.kid);
    const [old] = await kids();
    const current = await idp.admin.keys.rotate();
    expect(await kids()).toEqual([current, old]);
    clock += 3601_000;
    expect(await kids()).toEqual([current]);
  });
});
