import { request as httpRequest } from 'node:http';
import { useTempDir } from '@mcp-identity/common/testing';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type DualEraUpstream,
  MODERN,
  NEWER,
  startDualEraUpstream,
} from './fixtures/dual-era-upstream.js';
import { type GatewayFixture, proxyDefinition, startTestGateway } from './fixtures/gateway.js';
import { CLIENT_ID, type KeyManager, startKeyManager } from './fixtures/key-manager.js';
import { connectClient, json, postMcp, rawRequest, toolCall } from './fixtures/mcp-client.js';

/*
 * MCP 2026-07-28 beside 2025-11-25 at one proxy URL (issue 39): a modern POST is authorized
 * from its mirrored headers before its body is read, and refused (-32020) when the body says
 * otherwise, before anything reaches the upstream; a legacy request is governed from its body
 * as before, its mirrored headers never trusted. The upstream speaks both eras
 * (`@modelcontextprotocol/server` 2.4).
 */

const tempDir = useTempDir('gw-modern-');

const RULES = [
  { name: 'search_users', scopes: { allOf: ['list'] } },
  { name: 'delete_user', scopes: { allOf: ['delete'] } },
];

/** A definition serving every supported version (no `specVersions`: the default). */
function everyVersion(name: string, context: string, url: string, policies: unknown[] = []) {
  const definition = proxyDefinition(name, context, url, policies);
  delete (definition.spec as Record<string, unknown>).specVersions;
  return definition;
}

/** The headers and body of a modern request as a conforming client builds them. */
function modern(
  method: string,
  params: Record<string, unknown> = {},
  id = 7,
  version = MODERN,
): { headers: Record<string, string>; body: Record<string, unknown> } {
  const name = params.name ?? params.uri;
  return {
    headers: {
      'mcp-protocol-version': version,
      'mcp-method': method,
      ...(typeof name === 'string' && { 'mcp-name': name }),
    },
    body: {
      jsonrpc: '2.0',
      id,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': version,
          'io.modelcontextprotocol/clientInfo': { name: 'test', version: '1.0.0' },
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    },
  };
}

/** What the SDK 2.4 and 1.x clients have in common here. */
interface ToolClient {
  listTools(): Promise<{ tools: Array<{ name: string }> }>;
  callTool(call: { name: string; arguments: Record<string, unknown> }): Promise<unknown>;
}

describe('both protocol eras at one proxy', () => {
  let upstream: DualEraUpstream;
  let km: KeyManager;
  let fx: GatewayFixture;
  let url: (context: string) => string;
  const bearer = async (scope: string, sub = 'alice') => ({
    authorization: `Bearer ${await km.sign({ scope, sub })}`,
  });
  /** Upstream requests for this method since `from`. */
  const reached = (from: number, method: string) =>
    upstream.received.slice(from).filter((r) => r.method === method);

  beforeAll(async () => {
    upstream = await startDualEraUpstream();
    km = await startKeyManager();
    fx = await startTestGateway({ dataDir: tempDir(), keyManager: km });
    const auth = { name: 'mcp-auth', version: 'v1', params: { audiences: [CLIENT_ID] } };
    const authz = { name: 'mcp-authz', version: 'v1', params: { tools: RULES, filterLists: true } };
    const limit = {
      name: 'mcp-ratelimit',
      version: 'v1',
      params: { tools: [{ name: 'search_users', limits: [{ limit: 2, duration: '1h' }] }] },
    };
    const oldOnly = proxyDefinition('old-v1.0', '/old', upstream.mcpUrl);
    (oldOnly.spec as Record<string, unknown>).specVersions = ['2025-06-18'];
    const newest = proxyDefinition('newest-v1.0', '/newest', upstream.mcpUrl);
    (newest.spec as Record<string, unknown>).specVersions = ['2025-11-25', MODERN];
    const deployments = [
      everyVersion('open-v1.0', '/open', upstream.mcpUrl),
      everyVersion('governed-v1.0', '/governed', upstream.mcpUrl, [auth, authz]),
      everyVersion('limited-v1.0', '/limited', upstream.mcpUrl, [auth, limit]),
      oldOnly,
      newest,
    ];
    for (const definition of deployments) expect((await fx.deploy(definition)).status).toBe(201);
    url = (context) => `${fx.gateway.plainUrl}${context}/mcp`;
  });
  afterAll(async () => {
    await fx?.gateway.close();
    await Promise.all([upstream?.close(), km?.stop()]);
  });

  describe('a modern request whose headers and body disagree', () => {
    it.each([
      [
        'tool name',
        { 'mcp-name': 'search_users' },
        'Header mismatch: Mcp-Name header value "search_users" does not match body value "delete_user"',
      ],
      [
        'method',
        { 'mcp-method': 'tools/list', 'mcp-name': 'delete_user' },
        'Header mismatch: Mcp-Method header value "tools/list" does not match body value "tools/call"',
      ],
    ])('(%s) is refused 400 -32020 and never reaches the upstream', async (_what, lie, message) => {
      const { headers, body } = modern('tools/call', { name: 'delete_user', arguments: {} });
      const from = upstream.received.length;
      const refused = await postMcp(url('/open'), body, { ...headers, ...lie });
      expect(refused.status).toBe(400);
      expect(await json(refused)).toEqual({
        jsonrpc: '2.0',
        id: 7,
        error: { code: -32020, message },
      });
      expect(upstream.received.length).toBe(from);
      // The same body in the legacy era: governed from the body, its mirrored headers forwarded
      // unchanged and never trusted.
      const legacy = toolCall('delete_user', {}, 8);
      const fine = await postMcp(url('/open'), legacy, {
        'mcp-protocol-version': '2025-11-25',
        ...lie,
      });
      expect(fine.status).toBe(200);
      const [forwarded] = reached(from, 'tools/call');
      expect(forwarded?.headers['mcp-name']).toBe(lie['mcp-name']);
    });

    it('is refused when its _meta names another version', async () => {
      const { headers, body } = modern('tools/list');
      const params = body.params as Record<string, Record<string, unknown>>;
      (params._meta as Record<string, unknown>)['io.modelcontextprotocol/protocolVersion'] =
        '2025-11-25';
      const from = upstream.received.length;
      const refused = await postMcp(url('/open'), body, headers);
      expect(refused.status).toBe(400);
      expect((await json(refused)).error).toMatchObject({
        code: -32020,
        message: expect.stringContaining('MCP-Protocol-Version'),
      });
      expect(upstream.received.length).toBe(from);
    });

    it('is refused -32602 when its _meta lacks the version (an invalid envelope)', async () => {
      const { headers, body } = modern('tools/list');
      delete (body.params as Record<string, unknown>)._meta;
      const from = upstream.received.length;
      const refused = await postMcp(url('/open'), body, headers);
      expect(refused.status).toBe(400);
      expect(await json(refused)).toMatchObject({ id: 7, error: { code: -32602 } });
      expect(upstream.received.length).toBe(from);
    });

    it.each([
      ['no Mcp-Method', { 'mcp-method': '' }, 'Mcp-Method is missing'],
      ['no Mcp-Name on tools/call', { 'mcp-name': '' }, 'Mcp-Name is missing'],
      ['a bad Base64 sentinel', { 'mcp-name': '=?base64?%%%?=' }, 'invalid characters'],
      ['a bad Mcp-Param value', { 'mcp-param-region': '=?base64?***?=' }, 'invalid characters'],
    ])('is refused with %s, before the upstream', async (_what, change, message) => {
      const { headers, body } = modern('tools/call', { name: 'search_users', arguments: {} });
      const sent: Record<string, string> = { ...headers, ...change };
      for (const name of Object.keys(change)) {
        if (change[name as keyof typeof change] === '') delete sent[name];
      }
      const from = upstream.received.length;
      const refused = await postMcp(url('/open'), body, sent);
      expect(refused.status).toBe(400);
      expect(await json(refused)).toMatchObject({
        id: 7,
        error: { code: -32020, message: expect.stringContaining(message) },
      });
      expect(upstream.received.length).toBe(from);
    });

    it('passes with a Base64-encoded Mcp-Name that decodes to the body’s name', async () => {
      const { headers, body } = modern('tools/call', { name: 'search_users', arguments: {} });
      const encoded = `=?base64?${Buffer.from('search_users').toString('base64')}?=`;
      const answer = await postMcp(url('/open'), body, { ...headers, 'mcp-name': encoded });
      expect(answer.status).toBe(200);
    });
  });

  it('checks Mcp-Param-* headers against the arguments of a tool it saw listed', async () => {
    const { headers: listHeaders, body: list } = modern('tools/list');
    expect((await postMcp(url('/open'), list, listHeaders)).status).toBe(200);
    const sql = (args: Record<string, unknown>, params: Record<string, string>) => {
      const { headers, body } = modern('tools/call', { name: 'execute_sql', arguments: args });
      return postMcp(url('/open'), body, { ...headers, ...params });
    };
    const args = { region: 'eu-west1', query: 'select 1', options: { limit: 5 } };
    const from = upstream.received.length;
    const refusals: Array<[Record<string, unknown>, Record<string, string>, string]> = [
      [args, { 'mcp-param-region': 'us-east1', 'mcp-param-limit': '5' }, 'does not match'],
      [args, { 'mcp-param-region': 'eu-west1', 'mcp-param-limit': '6' }, 'does not match'],
      [args, { 'mcp-param-limit': '5' }, 'mcp-param-region is missing'],
      [
        { region: 'eu-west1', query: 'q' },
        { 'mcp-param-region': 'eu-west1', 'mcp-param-limit': '5' },
        'without its argument',
      ],
    ];
    for (const [sent, params, message] of refusals) {
      const refused = await sql(sent, params);
      expect(refused.status).toBe(400);
      expect((await json(refused)).error).toMatchObject({
        code: -32020,
        message: expect.stringContaining(message),
      });
    }
    expect(upstream.received.length).toBe(from);
    // Decoded, and integers compared as numbers; a null argument needs no header.
    const region = `=?base64?${Buffer.from('eu-west1').toString('base64')}?=`;
    const fine = await sql(args, { 'mcp-param-region': region, 'mcp-param-limit': '5.0' });
    expect(fine.status).toBe(200);
    const noLimit = await sql(
      { ...args, options: { limit: null } },
      { 'mcp-param-region': 'eu-west1' },
    );
    expect(noLimit.status).toBe(200);
  });

  it('answers a modern version the proxy does not list with -32022 and its versions', async () => {
    for (const [context, version, supported] of [
      ['/old', MODERN, ['2025-06-18']],
      ['/open', '2099-01-01', [MODERN]],
    ] as const) {
      const { headers, body } = modern('tools/list', {}, 3, version);
      const refused = await postMcp(url(context), body, headers);
      expect(refused.status).toBe(400);
      expect(await json(refused)).toMatchObject({
        id: 3,
        error: { code: -32022, data: { supported, requested: version } },
      });
    }
  });

  it('lets a browser preflight a modern request, mirrored headers included', async () => {
    const answer = await fetch(url('/open'), {
      method: 'OPTIONS',
      headers: {
        origin: 'http://localhost:6274',
        'access-control-request-method': 'POST',
        'access-control-request-headers':
          'mcp-protocol-version, mcp-method, mcp-name, mcp-param-region',
      },
    });
    expect(answer.status).toBe(204);
    const allowed = (answer.headers.get('access-control-allow-headers') ?? '').toLowerCase();
    for (const name of ['mcp-protocol-version', 'mcp-method', 'mcp-name', 'mcp-param-region']) {
      expect(allowed.split(', ')).toContain(name);
    }
  });

  it('answers a modern GET or DELETE with 405: the modern era has no stream or session', async () => {
    for (const method of ['GET', 'DELETE']) {
      const answer = await rawRequest(url('/open'), method, {
        accept: 'text/event-stream',
        'mcp-protocol-version': MODERN,
      });
      expect(answer.status).toBe(405);
      expect(answer.headers.allow).toBe('POST, OPTIONS');
    }
  });

  it('counter-offers its newest legacy version to an initialize it does not list', async () => {
    const from = upstream.received.length;
    const answer = await postMcp(url('/old'), {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'test', version: '1.0.0' },
      },
    });
    expect(answer.status).toBe(200);
    const text = await answer.text();
    expect(text).toContain('"protocolVersion":"2025-06-18"');
    const [sent] = reached(from, 'initialize');
    expect(sent?.body?.params).toMatchObject({ protocolVersion: '2025-06-18' });
  });

  it('passes server/discover to the upstream, listing only the versions both serve', async () => {
    const { headers, body } = modern('server/discover');
    const direct = await json(await postMcp(upstream.mcpUrl, body, headers));
    expect(direct.result.supportedVersions).toEqual([NEWER, MODERN]);
    const answer = await postMcp(url('/newest'), body, headers);
    expect(answer.status).toBe(200);
    const { result } = await json(answer);
    expect(result.supportedVersions).toEqual([MODERN]);
    expect(result.capabilities).toEqual(direct.result.capabilities);
  });

  describe('mcp-authz, in both eras', () => {
    it('refuses a forbidden tool 403 from the headers, without reading the body', async () => {
      const { headers, body } = modern('tools/call', { name: 'delete_user', arguments: {} });
      const text = JSON.stringify(body);
      const from = upstream.received.length;
      // Half the body is sent and the rest never: the answer cannot wait for it.
      const answer = await new Promise<{ status: number; auth: string }>((resolve, reject) => {
        bearer('list').then((auth) => {
          const req = httpRequest(
            url('/governed'),
            {
              method: 'POST',
              agent: false,
              headers: {
                'content-type': 'application/json',
                accept: 'application/json, text/event-stream',
                'content-length': String(text.length),
                ...headers,
                ...auth,
              },
            },
            (res) => {
              res.resume();
              resolve({
                status: res.statusCode ?? 0,
                auth: String(res.headers['www-authenticate']),
              });
              req.destroy();
            },
          );
          req.on('error', reject);
          req.write(text.slice(0, text.length / 2));
        }, reject);
      });
      expect(answer.status).toBe(403);
      expect(answer.auth).toContain('error="insufficient_scope"');
      expect(answer.auth).toContain('scope="delete"');
      expect(upstream.received.length).toBe(from);
    });

    it('a header naming an allowed tool cannot carry a forbidden body', async () => {
      const { headers, body } = modern('tools/call', { name: 'delete_user', arguments: {} });
      const from = upstream.received.length;
      const refused = await postMcp(url('/governed'), body, {
        ...headers,
        'mcp-name': 'search_users',
        ...(await bearer('list')),
      });
      expect(refused.status).toBe(400);
      expect((await json(refused)).error.code).toBe(-32020);
      expect(upstream.received.length).toBe(from);
    });

    it('a legacy request is governed from its body, whatever its mirrored headers say', async () => {
      const from = upstream.received.length;
      const refused = await postMcp(url('/governed'), toolCall('delete_user'), {
        'mcp-protocol-version': '2025-11-25',
        'mcp-method': 'tools/call',
        'mcp-name': 'search_users',
        ...(await bearer('list')),
      });
      expect(refused.status).toBe(403);
      expect(upstream.received.length).toBe(from);
    });

    /**
     * What a caller with the `list` scope gets through `/governed`, whichever client: the tool
     * it may call listed and answered, the other neither listed nor reaching the upstream.
     */
    const expectGoverned = async (client: ToolClient) => {
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      expect(names).toContain('search_users');
      expect(names).not.toContain('delete_user');
      const called = await client.callTool({ name: 'search_users', arguments: {} });
      expect(called).toMatchObject({ content: [{ type: 'text', text: 'search_users done' }] });
      const from = upstream.received.length;
      await expect(client.callTool({ name: 'delete_user', arguments: {} })).rejects.toThrow();
      expect(reached(from, 'tools/call')).toEqual([]);
    };

    const modernClient = async (mode: 'auto' | { pin: string }, scope: string) => {
      const client = new Client(
        { name: 'gateway-modern-test', version: '1.0.0' },
        { versionNegotiation: { mode } },
      );
      await client.connect(
        new StreamableHTTPClientTransport(new URL(url('/governed')), {
          requestInit: { headers: await bearer(scope) },
        }),
      );
      return client;
    };

    it.each([
      ['pinned to 2026-07-28', { pin: MODERN }],
      ['in auto mode', 'auto'],
    ] as const)('the SDK 2.4 client %s lists and calls what the caller may', async (_m, mode) => {
      const client = await modernClient(mode, 'list');
      try {
        expect(client.getProtocolEra()).toBe('modern');
        expect(client.getNegotiatedProtocolVersion()).toBe(MODERN);
        await expectGoverned(client);
      } finally {
        await client.close();
      }
    });

    it('the SDK 1.x client gets the same answers in the legacy era', async () => {
      const token = (await bearer('list')).authorization.slice('Bearer '.length);
      const client = await connectClient(url('/governed'), token);
      try {
        await expectGoverned(client);
      } finally {
        await client.close();
      }
    });

    it('marks a list filtered for its caller private in the modern era, ttlMs kept', async () => {
      const { headers, body } = modern('tools/list');
      const answer = await postMcp(url('/governed'), body, { ...headers, ...(await bearer('')) });
      expect(answer.status).toBe(200);
      const { result } = await json(answer);
      expect(result).toMatchObject({ cacheScope: 'private', ttlMs: 60_000 });
      expect(result.tools.map((t: { name: string }) => t.name)).not.toContain('search_users');
    });
  });

  describe('mcp-ratelimit, in both eras', () => {
    it.each([
      ['modern', 'mallory'],
      ['legacy', 'trudy'],
    ])('counts a %s tools/call and refuses the third before the upstream', async (era, sub) => {
      const auth = await bearer('', sub);
      const call = (id: number) => {
        if (era === 'legacy')
          return postMcp(url('/limited'), toolCall('search_users', {}, id), auth);
        const { headers, body } = modern('tools/call', { name: 'search_users', arguments: {} }, id);
        return postMcp(url('/limited'), body, { ...headers, ...auth });
      };
      expect((await call(1)).status).toBe(200);
      expect((await call(2)).status).toBe(200);
      const from = upstream.received.length;
      const refused = await call(3);
      expect(refused.status).toBe(429);
      expect((await json(refused)).error).toMatchObject({ message: 'Rate limit exceeded' });
      expect(upstream.received.length).toBe(from);
    });
  });
});
