import { useTempDir } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayFixture, proxyDefinition, startTestGateway } from './fixtures/gateway.js';
import { CLIENT_ID, type KeyManager, startKeyManager } from './fixtures/key-manager.js';
import { connectClient, json, postMcp, toolCall } from './fixtures/mcp-client.js';
import { startUpstream, TOOL_NAMES, type Upstream } from './fixtures/upstream.js';

const tempDir = useTempDir('gw-authz-');

/** The SCIM proxy's rules for four tools, as in workflows/scim/gateway-rules.yaml. */
const SCIM_RULES = [
  { name: 'search_users', scopes: { allOf: ['internal_user_mgt_list'] } },
  { name: 'delete_user', scopes: { allOf: ['internal_user_mgt_delete'] } },
  {
    name: 'add_user_to_group',
    scopes: { allOf: ['internal_user_mgt_view', 'internal_group_mgt_update'] },
  },
  {
    name: 'assign_role_to_user',
    scopes: { anyOf: ['internal_role_mgt_update', 'internal_role_mgt_users_update'] },
  },
];
const SEARCH_ARGS = { filter: 'userName sw a', count: 2 };

describe('mcp-authz', () => {
  let upstream: Upstream;
  let km: KeyManager;
  let fx: GatewayFixture;
  let scim: string;
  let plain: string;
  const bearer = async (scope: string) => ({ authorization: `Bearer ${await km.sign({ scope })}` });

  beforeAll(async () => {
    upstream = await startUpstream();
    km = await startKeyManager();
    fx = await startTestGateway({ dataDir: tempDir(), keyManager: km });
    const auth = {
      name: 'mcp-auth',
      version: 'v1',
      params: { issuers: ['idp'], audiences: [CLIENT_ID] },
    };
    const authz = (params: Record<string, unknown>) => ({
      name: 'mcp-authz',
      version: 'v1',
      params,
    });
    const deployments = [
      proxyDefinition('scim-v1.0', '/scim', upstream.mcpUrl, [auth, authz({ tools: SCIM_RULES })]),
      proxyDefinition('filtered-v1.0', '/filtered', upstream.mcpUrl, [
        auth,
        authz({
          tools: SCIM_RULES,
          prompts: [{ name: 'greeting', scopes: { allOf: ['p'] } }],
          filterLists: true,
        }),
      ]),
      proxyDefinition('filtered-json-v1.0', '/filtered-json', upstream.jsonMcpUrl, [
        auth,
        authz({ tools: SCIM_RULES, filterLists: true }),
      ]),
      proxyDefinition('wild-v1.0', '/wild', upstream.mcpUrl, [
        auth,
        authz({
          tools: [
            { name: '*', scopes: { allOf: ['base'] } },
            { name: 'delete_user', scopes: { allOf: ['danger'] } },
          ],
          methods: [{ name: 'tools/list', scopes: { allOf: ['lister'] } }],
        }),
      ]),
      proxyDefinition('claims-v1.0', '/claims', upstream.mcpUrl, [
        auth,
        authz({
          tools: [
            { name: 'delete_user', claims: { allOf: [{ claim: 'groups', values: ['admins'] }] } },
            {
              name: 'add_user_to_group',
              claims: { anyOf: [{ claim: 'dept', values: ['it', 'sec'] }] },
            },
            { name: 'search_users', requiredScopes: ['legacy'], scopes: { anyOf: ['modern'] } },
            { name: 'assign_role_to_user', requiredScopes: ['legacy'] },
          ],
        }),
      ]),
      proxyDefinition('authz-only-v1.0', '/authz-only', upstream.mcpUrl, [
        authz({
          tools: [{ name: 'delete_user', scopes: { allOf: ['internal_user_mgt_delete'] } }],
        }),
      ]),
    ];
    for (const definition of deployments) expect((await fx.deploy(definition)).status).toBe(201);
    plain = fx.gateway.plainUrl;
    scim = `${plain}/scim/mcp`;
  });
  afterAll(async () => {
    await fx?.gateway.close();
    await Promise.all([upstream?.close(), km?.stop()]);
  });

  it.each([
    ['internal_user_mgt_view internal_user_mgt_list', 'search_users', 200, '', ''],
    [
      'internal_user_mgt_view internal_user_mgt_list',
      'delete_user',
      403,
      'internal_user_mgt_delete',
      'the token lacks the scope internal_user_mgt_delete',
    ],
    [
      'internal_group_mgt_update',
      'add_user_to_group',
      403,
      'internal_user_mgt_view',
      'the token lacks the scope internal_user_mgt_view',
    ],
    ['internal_role_mgt_users_update', 'assign_role_to_user', 200, '', ''],
    [
      'internal_user_mgt_list',
      'assign_role_to_user',
      403,
      'internal_role_mgt_update internal_role_mgt_users_update',
      'the token lacks scopes this call needs: internal_role_mgt_update internal_role_mgt_users_update',
    ],
  ])(
    'decision table: scopes "%s" calling %s → %i',
    async (scope, tool, status, missing, description) => {
      const before = upstream.hits;
      const args = tool === 'search_users' ? SEARCH_ARGS : {};
      const response = await postMcp(scim, toolCall(tool, args), await bearer(scope));
      expect(response.status).toBe(status);
      if (status === 403) {
        expect(response.headers.get('www-authenticate')).toBe(
          `Bearer resource_metadata="${plain}/scim/.well-known/oauth-protected-resource", scope="${missing}", error="insufficient_scope", ` +
            `error_description="${description}"`,
        );
        expect(await json(response)).toEqual({
          error: 'Forbidden',
          message: 'Forbidden: insufficient permissions to access this MCP resource',
        });
        expect(upstream.hits).toBe(before);
      } else {
        await response.text();
        expect(upstream.hits).toBe(before + 1);
      }
    },
  );

  it('allows and denies through the MCP SDK client end to end', async () => {
    const client = await connectClient(
      scim,
      await km.sign({ scope: 'internal_user_mgt_view internal_user_mgt_list' }),
    );
    const listed = await client.listTools();
    expect(listed.tools.map((t) => t.name).sort()).toEqual([...TOOL_NAMES].sort());
    const ok = await client.callTool({ name: 'search_users', arguments: SEARCH_ARGS });
    expect(ok.content).toEqual([{ type: 'text', text: 'found 2 for userName sw a' }]);
    await expect(client.callTool({ name: 'delete_user', arguments: {} })).rejects.toThrow(
      /insufficient permissions/,
    );
    await client.close();
  });

  it('lets ungoverned methods through and refuses a governed call without a token with 401', async () => {
    const url = `${plain}/authz-only/mcp`;
    const before = upstream.hits;
    const open = await postMcp(url, toolCall('search_users', SEARCH_ARGS));
    expect(open.status).toBe(200);
    await open.text();
    const governed = await postMcp(url, toolCall('delete_user'));
    expect(governed.status).toBe(401);
    expect(governed.headers.get('www-authenticate')).toContain('error="invalid_token"');
    expect(upstream.hits).toBe(before + 1);
  });

  it('requires every matching rule: wildcard and exact, and method rules for lists', async () => {
    const url = `${plain}/wild/mcp`;
    expect(
      (await postMcp(url, toolCall('search_users', SEARCH_ARGS), await bearer('base'))).status,
    ).toBe(200);
    const onlyDanger = await postMcp(url, toolCall('delete_user'), await bearer('danger'));
    expect(onlyDanger.status).toBe(403);
    expect(onlyDanger.headers.get('www-authenticate')).toContain('scope="base"');
    expect((await postMcp(url, toolCall('delete_user'), await bearer('base danger'))).status).toBe(
      200,
    );
    const list = { jsonrpc: '2.0', id: 3, method: 'tools/list' };
    const noLister = await postMcp(url, list, await bearer('base'));
    expect(noLister.status).toBe(403);
    expect(noLister.headers.get('www-authenticate')).toContain('scope="lister"');
    expect((await postMcp(url, list, await bearer('lister'))).status).toBe(200);
  });

  it('evaluates claim rules (array-aware) and the deprecated requiredScopes', async () => {
    const url = `${plain}/claims/mcp`;
    const call = async (tool: string, claims: Record<string, unknown>) => {
      const response = await postMcp(
        url,
        toolCall(tool, tool === 'search_users' ? SEARCH_ARGS : {}),
        {
          authorization: `Bearer ${await km.sign(claims)}`,
        },
      );
      await response.text();
      return response.status;
    };
    expect(await call('delete_user', { groups: ['users', 'admins'] })).toBe(200);
    expect(await call('delete_user', { groups: ['users'] })).toBe(403);
    expect(await call('delete_user', {})).toBe(403);
    expect(await call('add_user_to_group', { dept: 'sec' })).toBe(200);
    expect(await call('add_user_to_group', { dept: 'hr' })).toBe(403);
    // `scopes` wins over the deprecated `requiredScopes` when both are given.
    expect(await call('search_users', { scope: 'modern' })).toBe(200);
    expect(await call('search_users', { scope: 'legacy' })).toBe(403);
    expect(await call('assign_role_to_user', { scope: 'legacy' })).toBe(200);
    expect(await call('assign_role_to_user', { scope: 'other' })).toBe(403);
  });

  it('matches rule names exactly and case-sensitively', async () => {
    const url = `${plain}/authz-only/mcp`;
    for (const name of ['Delete_User', 'delete_user_x', 'delete']) {
      const response = await postMcp(url, toolCall(name));
      expect(response.status).toBe(200); // ungoverned: the upstream answers (unknown tool)
      await response.text();
    }
  });

  it('filters tools/list over SSE to what the token may call', async () => {
    const client = await connectClient(
      `${plain}/filtered/mcp`,
      await km.sign({ scope: 'internal_role_mgt_update internal_user_mgt_list' }),
    );
    const listed = await client.listTools();
    expect(listed.tools.map((t) => t.name).sort()).toEqual(['assign_role_to_user', 'search_users']);
    const prompts = await client.listPrompts();
    expect(prompts.prompts).toEqual([]);
    await client.close();
  });

  it('filters tools/list in JSON responses', async () => {
    const response = await postMcp(
      `${plain}/filtered-json/mcp`,
      { jsonrpc: '2.0', id: 9, method: 'tools/list' },
      { ...(await bearer('internal_user_mgt_delete')), 'accept-encoding': 'gzip, br' },
    );
    expect(response.headers.get('content-type')).toContain('application/json');
    const body = await json(response);
    expect(body.id).toBe(9);
    expect(body.result.tools.map((t: { name: string }) => t.name)).toEqual(['delete_user']);
    // Filtering needs a readable body: the upstream is asked for it uncompressed (an absent
    // Accept-Encoding would allow any coding, RFC 9110 §12.5.3).
    expect(upstream.lastHeaders?.['accept-encoding']).toBe('identity');
  });

  it('records decisions in the metrics', async () => {
    const text = await (await fetch(`${fx.gateway.managementUrl}/metrics`)).text();
    expect(text).toMatch(
      /mcp_gateway_requests_total\{proxy="scim-v1.0",method="tools\/call",decision="forbidden"\} [1-9]/,
    );
    expect(text).toMatch(
      /mcp_gateway_requests_total\{proxy="scim-v1.0",method="tools\/call",decision="allowed"\} [1-9]/,
    );
    expect(text).toContain(
      'mcp_gateway_request_duration_seconds_bucket{proxy="scim-v1.0",le="+Inf"}',
    );
  });
});
