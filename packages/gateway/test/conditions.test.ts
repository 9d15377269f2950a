import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { lineLogger, useTempDir } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import {
  type DualEraUpstream,
  MODERN,
  startDualEraUpstream,
} from './fixtures/dual-era-upstream.js';
import { type GatewayFixture, proxyDefinition, startTestGateway } from './fixtures/gateway.js';
import { CLIENT_ID, type KeyManager, startKeyManager } from './fixtures/key-manager.js';
import { json, MCP_POST_HEADERS, postMcp, toolCall } from './fixtures/mcp-client.js';
import { startUpstream, type Upstream } from './fixtures/upstream.js';

/*
 * Issue 42: CEL conditions on mcp-authz rules, defaultAction deny, and the decisions endpoint,
 * through a running gateway in front of a recording upstream.
 */

const tempDir = useTempDir('gw-conditions-');
const require = createRequire(import.meta.url);
const rulesOf = (file: string) =>
  (
    parseYaml(readFileSync(require.resolve(`@mcp-identity/scim-tools/${file}`), 'utf8')) as {
      tools: Record<string, unknown>[];
    }
  ).tools;
/** The shipped scope rules and the shipped conditions, as an operator opting in deploys them. */
const SHIPPED = [...rulesOf('gateway-rules.yaml'), ...rulesOf('gateway-conditions.yaml')];

const auth = { name: 'mcp-auth', version: 'v1', params: { audiences: [CLIENT_ID] } };
const authz = (params: Record<string, unknown>) => ({ name: 'mcp-authz', version: 'v1', params });
const MANAGEMENT = '/api/management/v1/mcp-proxies';

interface Row {
  name: string;
  proxy: 'scim' | 'deny';
  claims: Record<string, unknown>;
  tool: string;
  args: Record<string, unknown>;
  status: 200 | 403;
  /** What the refusal names: a rule (a condition refused) or the missing scopes. */
  rule?: string;
  missing?: string;
}

const VIEW_LIST = 'internal_user_mgt_view internal_user_mgt_list';
const ROWS: Row[] = [
  // The spec's decision table (§5.2), unchanged by the shipped conditions.
  {
    name: '§5.2 view+list search_users',
    proxy: 'scim',
    claims: { scope: VIEW_LIST },
    tool: 'search_users',
    args: { filter: 'userName sw a', count: 2 },
    status: 200,
  },
  {
    name: '§5.2 view+list delete_user',
    proxy: 'scim',
    claims: { scope: VIEW_LIST },
    tool: 'delete_user',
    args: { userId: 'u-2' },
    status: 403,
    missing: 'internal_user_mgt_delete',
  },
  {
    name: '§5.2 group update add_user_to_group',
    proxy: 'scim',
    claims: { scope: 'internal_group_mgt_update' },
    tool: 'add_user_to_group',
    args: {},
    status: 403,
    missing: 'internal_user_mgt_view',
  },
  {
    name: '§5.2 role users update assign_role_to_user',
    proxy: 'scim',
    claims: { scope: 'internal_role_mgt_users_update' },
    tool: 'assign_role_to_user',
    args: { roleId: 'r-1', userId: 'u-2' },
    status: 200,
  },
  // No self-deletion.
  {
    name: 'delete_user of another user',
    proxy: 'scim',
    claims: { sub: 'u-1', scope: 'internal_user_mgt_delete' },
    tool: 'delete_user',
    args: { userId: 'u-2' },
    status: 200,
  },
  {
    name: 'delete_user of oneself',
    proxy: 'scim',
    claims: { sub: 'u-1', scope: 'internal_user_mgt_delete' },
    tool: 'delete_user',
    args: { userId: 'u-1' },
    status: 403,
    rule: 'delete_user',
  },
  // No privileged role without the role-administration scope.
  {
    name: 'assign a privileged role with role admin scope',
    proxy: 'scim',
    claims: { scope: 'internal_role_mgt_update' },
    tool: 'assign_role_to_user',
    args: { roleId: 'admin-role-id', userId: 'u-2' },
    status: 200,
  },
  {
    name: 'assign a privileged role without it',
    proxy: 'scim',
    claims: { scope: 'internal_role_mgt_users_update' },
    tool: 'assign_role_to_user',
    args: { roleId: 'admin-role-id', userId: 'u-2' },
    status: 403,
    rule: 'assign_role_to_user',
  },
  // Profile updates within the caller's department.
  {
    name: 'profile update in own department',
    proxy: 'scim',
    claims: { scope: 'internal_user_mgt_update', department: 'sales' },
    tool: 'update_user_profile',
    args: { userId: 'u-2', department: 'sales' },
    status: 200,
  },
  {
    name: 'profile update in another department',
    proxy: 'scim',
    claims: { scope: 'internal_user_mgt_update', department: 'sales' },
    tool: 'update_user_profile',
    args: { userId: 'u-2', department: 'finance' },
    status: 403,
    rule: 'update_user_profile',
  },
  {
    name: 'profile update without a department claim',
    proxy: 'scim',
    claims: { scope: 'internal_user_mgt_update' },
    tool: 'update_user_profile',
    args: { userId: 'u-2', department: 'sales' },
    status: 403,
    rule: 'update_user_profile',
  },
  // defaultAction deny.
  {
    name: 'deny: a ruled tool',
    proxy: 'deny',
    claims: { scope: 'internal_user_mgt_list' },
    tool: 'search_users',
    args: { filter: 'x', count: 1 },
    status: 200,
  },
  {
    name: 'deny: an unruled tool',
    proxy: 'deny',
    claims: { scope: 'internal_user_mgt_list' },
    tool: 'add_user_to_group',
    args: {},
    status: 403,
  },
];

describe('mcp-authz conditions', () => {
  const audit: Record<string, unknown>[] = [];
  let upstream: Upstream;
  let km: KeyManager;
  let fx: GatewayFixture;
  const url = (proxy: string) => `${fx.gateway.plainUrl}/${proxy}/mcp`;

  beforeAll(async () => {
    upstream = await startUpstream();
    km = await startKeyManager();
    fx = await startTestGateway({
      dataDir: tempDir(),
      keyManager: km,
      logger: lineLogger((line) => {
        if (line.msg === 'mcp request') audit.push(line.audit as Record<string, unknown>);
      }),
    });
    const deployments = [
      proxyDefinition('scim-v1.0', '/scim', upstream.mcpUrl, [auth, authz({ tools: SHIPPED })]),
      proxyDefinition('deny-v1.0', '/deny', upstream.mcpUrl, [
        auth,
        authz({
          tools: [{ name: 'search_users', scopes: { allOf: ['internal_user_mgt_list'] } }],
          defaultAction: 'deny',
          filterLists: true,
        }),
      ]),
    ];
    for (const definition of deployments) expect((await fx.deploy(definition)).status).toBe(201);
  });
  afterAll(async () => {
    await fx?.gateway.close();
    await Promise.all([upstream?.close(), km?.stop()]);
  });

  const explain = (proxy: string, body: unknown) =>
    fx.management(`${MANAGEMENT}/${proxy}-v1.0/decisions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it.each(ROWS)('$name: a real call and the decisions endpoint agree ($status)', async (row) => {
    const before = upstream.hits;
    const token = await km.sign(row.claims);
    const response = await postMcp(url(row.proxy), toolCall(row.tool, row.args), {
      authorization: `Bearer ${token}`,
    });
    expect(response.status).toBe(row.status);
    const body = await response.text();
    expect(upstream.hits).toBe(before + (row.status === 200 ? 1 : 0));
    if (row.missing !== undefined) {
      expect(response.headers.get('www-authenticate')).toContain(
        `scope="${row.missing}", error="insufficient_scope"`,
      );
    } else if (row.status === 403) {
      const error = JSON.parse(body);
      expect(response.headers.get('www-authenticate')).toBeNull();
      expect(error.error.message).toBe(
        row.rule
          ? `Forbidden: mcp-authz rule '${row.rule}' refused the call`
          : `Forbidden: no mcp-authz rule allows tools/call of '${row.tool}'`,
      );
      // The audit line names the rule, the outcome and why; neither it nor the answer says
      // what the condition read.
      const line = audit.at(-1);
      expect(line).toMatchObject({ decision: 'forbidden', tool: row.tool });
      if (row.rule) {
        expect(line?.rule).toBe(row.rule);
        expect(line?.reason).toMatch(new RegExp(`^rule '${row.rule}'`));
      } else {
        expect(line?.reason).toBe(`defaultAction deny: tools/call of '${row.tool}'`);
      }
      for (const value of Object.values(row.args)) {
        expect(body).not.toContain(String(value));
        expect(`${line?.reason} ${line?.rule}`).not.toContain(String(value));
      }
    }

    // The same decision from the explain endpoint, both from the claims and from the token.
    const call = { method: 'tools/call', tool: row.tool, arguments: row.args };
    for (const subject of [{ claims: await claimsOf(token) }, { token }]) {
      const explained = await explain(row.proxy, { ...subject, call });
      expect(explained.status).toBe(200);
      const answer = await json(explained);
      expect(answer.status).toBe(row.status);
      expect(answer.decision).toBe(row.status === 200 ? 'allowed' : 'forbidden');
      if (row.rule) expect(answer.rule).toBe(row.rule);
      if (row.missing) expect(answer.missingScopes).toEqual(row.missing.split(' '));
    }
    expect(upstream.hits).toBe(before + (row.status === 200 ? 1 : 0));
  });

  it('gives conditions the documented context: token, call, proxy and now', async () => {
    const when = [
      "proxy.name == 'context-v1.0'",
      "now > timestamp('2020-01-01T00:00:00Z')",
      "token.client_id == 'app'",
      "'b' in token.scope",
      "has(token.act) && token.act.sub == 'agent'",
      "call.method == 'tools/call' && call.tool == 'delete_user'",
      "call.era == '2025-11-25'",
      'call.arguments.count == 2',
    ].join(' && ');
    const definition = proxyDefinition('context-v1.0', '/context', upstream.mcpUrl, [
      auth,
      authz({ tools: [{ name: 'delete_user', when }] }),
    ]);
    expect((await fx.deploy(definition)).status).toBe(201);
    const call = { method: 'tools/call', tool: 'delete_user', arguments: { count: 2 } };
    const decide = async (claims: Record<string, unknown>, era = '2025-11-25') =>
      (await json(await explain('context', { claims, call: { ...call, era } }))).decision;
    const claims = { azp: 'app', scope: 'a b', act: { sub: 'agent' } };
    expect(await decide(claims)).toBe('allowed');
    expect(await decide({ ...claims, azp: undefined, client_id: 'app' })).toBe('allowed');
    expect(await decide({ ...claims, act: undefined })).toBe('forbidden');
    expect(await decide({ ...claims, scope: 'a' })).toBe('forbidden');
    expect(await decide(claims, '2026-07-28')).toBe('forbidden');
  });

  it('filters lists by the conditions that do not read arguments, keeping those that do', async () => {
    const definition = proxyDefinition('listing-v1.0', '/listing', upstream.mcpUrl, [
      auth,
      authz({
        tools: [
          { name: 'delete_user', unless: 'call.arguments.userId == token.sub' },
          { name: 'add_user_to_group', when: "token.sub == 'admin'" },
        ],
        filterLists: true,
      }),
    ]);
    expect((await fx.deploy(definition)).status).toBe(201);
    const listed = async (sub: string) => {
      const response = await postMcp(
        url('listing'),
        { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
        { authorization: `Bearer ${await km.sign({ sub })}` },
      );
      const text = await response.text();
      const data = JSON.parse(text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1));
      return data.result.tools.map((t: { name: string }) => t.name).sort();
    };
    expect(await listed('u-1')).toEqual(['assign_role_to_user', 'delete_user', 'search_users']);
    expect(await listed('admin')).toEqual([
      'add_user_to_group',
      'assign_role_to_user',
      'delete_user',
      'search_users',
    ]);
  });

  it('lists only what the caller may call under defaultAction deny', async () => {
    const token = await km.sign({ scope: 'internal_user_mgt_list' });
    const response = await postMcp(
      url('deny'),
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
      { authorization: `Bearer ${token}` },
    );
    const text = await response.text();
    const data = JSON.parse(text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1));
    expect(data.result.tools.map((t: { name: string }) => t.name)).toEqual(['search_users']);
  });

  it.each([
    ['a syntax error', 'call.arguments.userId ==', /^invalid CEL at 1:23: /],
    [
      'an unknown variable',
      'user.id == token.sub',
      /invalid CEL at 1:1: undeclared reference to 'user'/,
    ],
    [
      'an unknown field',
      'call.argument.userId == token.sub',
      /invalid CEL at 1:5: call has no field 'argument'/,
    ],
    [
      'a type error',
      "token.sub + 1 == 'a'",
      /invalid CEL at 1:11: no such overload: string \+ int/,
    ],
    ['a non-bool result', 'token.sub', /a condition must be a bool expression, not string/],
    ['an unknown function', 'evil(token.sub)', /undeclared reference to function 'evil'/],
  ])('refuses a condition with %s at deploy, with its position', async (_what, source, message) => {
    const definition = proxyDefinition('bad-v1.0', '/bad', upstream.mcpUrl, [
      auth,
      authz({ tools: [{ name: 'delete_user', unless: source }] }),
    ]);
    const response = await fx.deploy(definition);
    expect(response.status).toBe(400);
    const { errors } = await json(response);
    expect(errors).toEqual([
      { field: 'spec.policies[1].params.tools[0].unless', message: expect.stringMatching(message) },
    ]);
  });

  it('refuses expensive conditions at deploy: loops, and more nodes than the bound', async () => {
    const loops = 'call.arguments.ids.all(a, call.arguments.ids.all(b, a != b || a == b))';
    const huge = Array.from({ length: 30 }, (_, i) => `token.sub == 'u${i}'`).join(' || ');
    const reads = Array.from({ length: 9 }, (_, i) => `'x${i}' in call.arguments.ids`).join(' || ');
    for (const [source, message] of [
      [loops, /macros that loop .* are not allowed/],
      [huge, /at most 128 nodes/],
      [reads, /may read call.arguments at most 8 times/],
    ] as const) {
      const response = await fx.deploy(
        proxyDefinition('costly-v1.0', '/costly', upstream.mcpUrl, [
          auth,
          authz({ tools: [{ name: 'delete_user', when: source }] }),
        ]),
      );
      expect(response.status).toBe(400);
      expect(JSON.stringify(await json(response))).toMatch(message);
    }
  });

  it('refuses a call whose arguments exceed what a condition reads, before the upstream', async () => {
    const before = upstream.hits;
    const token = await km.sign({ sub: 'u-1', scope: 'internal_user_mgt_delete' });
    const args = { userId: 'u-2', padding: Array.from({ length: 5000 }, (_, i) => i) };
    const response = await postMcp(url('scim'), toolCall('delete_user', args), {
      authorization: `Bearer ${token}`,
    });
    expect(response.status).toBe(403);
    expect((await json(response)).error.message).toBe(
      "Forbidden: mcp-authz rule 'delete_user' refused the call",
    );
    expect(upstream.hits).toBe(before);
  });

  it('answers 400 to a malformed decision request and 404 to an unknown proxy', async () => {
    expect((await explain('scim', { call: { method: 'tools/call' } })).status).toBe(400);
    expect((await explain('scim', { claims: {}, call: { method: 'tools/call' } })).status).toBe(
      200,
    );
    expect((await explain('nope', { claims: {}, call: { method: 'tools/call' } })).status).toBe(
      404,
    );
  });
});

describe('mcp-authz conditions in MCP 2026-07-28', () => {
  let upstream: DualEraUpstream;
  let km: KeyManager;
  let fx: GatewayFixture;
  let url: string;

  beforeAll(async () => {
    upstream = await startDualEraUpstream();
    km = await startKeyManager();
    fx = await startTestGateway({ dataDir: tempDir(), keyManager: km });
    const definition = proxyDefinition('era-v1.0', '/era', upstream.mcpUrl, [
      auth,
      authz({
        tools: [
          { name: 'delete_user', unless: 'call.arguments.userId == token.sub' },
          { name: 'add_user_to_group', unless: `call.era == '${MODERN}'` },
          // `region` is mirrored into Mcp-Param-Region (the upstream's x-mcp-header).
          { name: 'execute_sql', unless: "call.arguments.region == 'forbidden'" },
        ],
      }),
    ]);
    (definition.spec as Record<string, unknown>).specVersions = ['2025-11-25', MODERN];
    expect((await fx.deploy(definition)).status).toBe(201);
    url = `${fx.gateway.plainUrl}/era/mcp`;
  });
  afterAll(async () => {
    await fx?.gateway.close();
    await Promise.all([upstream?.close(), km?.stop()]);
  });

  /** A modern request as a conforming client sends it: mirrored headers, `_meta` version. */
  const modernRequest = async (
    method: string,
    params: Record<string, unknown>,
    extraHeaders: Record<string, string> = {},
    body?: string,
  ) =>
    fetch(url, {
      method: 'POST',
      headers: {
        ...MCP_POST_HEADERS,
        authorization: `Bearer ${await km.sign({ sub: 'u-1' })}`,
        'mcp-protocol-version': MODERN,
        'mcp-method': method,
        ...(typeof params.name === 'string' ? { 'mcp-name': params.name } : {}),
        ...extraHeaders,
      },
      body:
        body ??
        JSON.stringify({
          jsonrpc: '2.0',
          id: 3,
          method,
          params: {
            ...params,
            _meta: {
              'io.modelcontextprotocol/protocolVersion': MODERN,
              'io.modelcontextprotocol/clientInfo': { name: 'test', version: '1.0.0' },
              'io.modelcontextprotocol/clientCapabilities': {},
            },
          },
        }),
    });
  const modernCall = (tool: string, args: Record<string, unknown>, body?: string) =>
    modernRequest('tools/call', { name: tool, arguments: args }, {}, body);

  it('decides a condition over arguments once the body is read, before the upstream', async () => {
    const before = upstream.received.length;
    const self = await modernCall('delete_user', { userId: 'u-1' });
    expect(self.status).toBe(403);
    expect((await json(self)).error.message).toBe(
      "Forbidden: mcp-authz rule 'delete_user' refused the call",
    );
    expect(upstream.received.length).toBe(before);
    const other = await modernCall('delete_user', { userId: 'u-2' });
    expect(other.status).toBe(200);
    await other.text();
    expect(upstream.received.length).toBe(before + 1);
  });

  it('decides a condition without arguments from the headers, before the body is read', async () => {
    const before = upstream.received.length;
    // Not JSON at all: read, it would be a 400; the refusal came first.
    const response = await modernCall('add_user_to_group', {}, 'not json');
    expect(response.status).toBe(403);
    expect((await json(response)).error.message).toBe(
      "Forbidden: mcp-authz rule 'add_user_to_group' refused the call",
    );
    expect(upstream.received.length).toBe(before);
  });

  it('decides a condition over a mirrored argument from its Mcp-Param header, before the body', async () => {
    // The proxy learns the tool's x-mcp-header annotations from a modern tools/list.
    const listed = await modernRequest('tools/list', {});
    expect(listed.status).toBe(200);
    await listed.text();
    const before = upstream.received.length;
    const sql = (region: string, body?: string) =>
      modernRequest(
        'tools/call',
        { name: 'execute_sql', arguments: { region, query: 'select 1' } },
        { 'mcp-param-region': region },
        body,
      );
    // Not JSON at all: read, it would be a 400; the headers' region was refused first.
    const refused = await sql('forbidden', 'not json');
    expect(refused.status).toBe(403);
    expect((await json(refused)).error.message).toBe(
      "Forbidden: mcp-authz rule 'execute_sql' refused the call",
    );
    expect(upstream.received.length).toBe(before);
    const allowed = await sql('eu');
    expect(allowed.status).toBe(200);
    await allowed.text();
    expect(upstream.received.length).toBe(before + 1);
  });

  it('explains a call of either era as it is decided', async () => {
    const explain = async (era: string) => {
      const response = await fx.management(`${MANAGEMENT}/era-v1.0/decisions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          claims: { sub: 'u-1' },
          call: { method: 'tools/call', tool: 'add_user_to_group', arguments: {}, era },
        }),
      });
      return (await json(response)).decision;
    };
    expect(await explain(MODERN)).toBe('forbidden');
    expect(await explain('2025-11-25')).toBe('allowed');
  });
});

/** The claims of a token the key manager signed. */
async function claimsOf(token: string): Promise<Record<string, unknown>> {
  const [, payload = ''] = token.split('.');
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
}
