import { gzipSync } from 'node:zlib';
import { rawHttpStatus, useTempDir } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayFixture, proxyDefinition, startTestGateway } from './fixtures/gateway.js';
import { CLIENT_ID, type KeyManager, startKeyManager } from './fixtures/key-manager.js';
import { MCP_POST_HEADERS, rawRequest, toolCall } from './fixtures/mcp-client.js';
import { type SdkHttpUpstream, startSdkHttpUpstream } from './fixtures/sdk-http-upstream.js';

const tempDir = useTempDir('gw-body-meaning-');
const SECRET_ENV = 'GW_TEST_BODY_MEANING_SECRET';
const UPSTREAM_SECRET = 'sdk-upstream-secret-5c1e';
const DELETE_SCOPE = 'users:delete';

/** `delete_user` for alice, with the name's `_` written as UTF-7 does (`+AF8-`). */
const UTF7_DELETE = JSON.stringify(toolCall('delete_user', { id: 'alice' })).replace(
  'delete_user',
  'delete+AF8-user',
);
/** `tools/list`, with the `/` written as UTF-7 does (`+AC8-`). */
const UTF7_LIST = '{"jsonrpc":"2.0","id":2,"method":"tools+AC8-list"}';

describe('one meaning per body: what mcp-authz decides is what the upstream runs', () => {
  let upstream: SdkHttpUpstream;
  let km: KeyManager;
  let fx: GatewayFixture;
  let url: string;
  let plainUrl: string;
  /** A caller that may use `echo` but not `delete_user`. */
  let limited: Record<string, string>;

  /** One request to the gateway; what reached the upstream meanwhile comes with the answer. */
  const send = async (
    target: string,
    method: string,
    headers: Record<string, string>,
    body?: string | Buffer,
  ) => {
    const before = upstream.arrivals.length;
    const response = await rawRequest(target, method, headers, body);
    return { ...response, arrived: upstream.arrivals.slice(before) };
  };

  beforeAll(async () => {
    process.env[SECRET_ENV] = UPSTREAM_SECRET;
    upstream = await startSdkHttpUpstream();
    km = await startKeyManager();
    fx = await startTestGateway({ dataDir: tempDir(), keyManager: km });
    const policies = [
      { name: 'mcp-auth', version: 'v1', params: { audiences: [CLIENT_ID] } },
      {
        name: 'mcp-authz',
        version: 'v1',
        params: {
          tools: [{ name: 'delete_user', scopes: { allOf: [DELETE_SCOPE] } }],
          filterLists: true,
        },
      },
    ];
    for (const [name, context, attached] of [
      ['sdk-v1.0', '/sdk', policies],
      ['sdk-plain-v1.0', '/sdk-plain', []],
    ] as const) {
      const definition = proxyDefinition(name, context, upstream.mcpUrl, attached);
      const spec = definition.spec as { upstream: Record<string, unknown> };
      spec.upstream.auth = { header: 'X-Gateway-Auth', secretRef: `env:${SECRET_ENV}` };
      const deployed = await fx.deploy(definition);
      expect(deployed.status, await deployed.clone().text()).toBe(201);
    }
    url = `${fx.gateway.plainUrl}/sdk/mcp`;
    plainUrl = `${fx.gateway.plainUrl}/sdk-plain/mcp`;
    limited = { authorization: `Bearer ${await km.sign({ scope: 'mcp' })}` };
  });
  afterAll(async () => {
    delete process.env[SECRET_ENV];
    await fx?.gateway.close();
    await Promise.all([upstream?.close(), km?.stop()]);
  });

  it('forwards an allowed call with the Content-Type it was read as, and keeps delete_user for its scope', async () => {
    const echo = JSON.stringify(toolCall('echo', { text: 'hi' }));
    for (const contentType of ['application/json', 'Application/JSON; Charset="UTF-8"']) {
      const allowed = await send(
        url,
        'POST',
        { ...MCP_POST_HEADERS, ...limited, 'content-type': contentType },
        echo,
      );
      expect(allowed.status, allowed.body).toBe(200);
      expect(allowed.body, contentType).toContain('"text":"hi"');
      expect(allowed.arrived, contentType).toHaveLength(1);
      expect(allowed.arrived[0]?.headers['content-type'], contentType).toBe('application/json');
      expect(allowed.arrived[0]?.headers['x-gateway-auth'], contentType).toBe(UPSTREAM_SECRET);
    }
    const denied = await send(
      url,
      'POST',
      { ...MCP_POST_HEADERS, ...limited },
      JSON.stringify(toolCall('delete_user', { id: 'alice' })),
    );
    expect(denied.arrived).toEqual([]);
    expect(denied.status).toBe(403);
    expect(upstream.deleted).toEqual([]);
  });

  it('refuses a UTF-7 body before mcp-authz: delete+AF8-user deletes nobody, tools+AC8-list lists nothing', async () => {
    for (const contentType of [
      'application/json; charset=utf-7',
      'application/json;charset="UTF-7"',
      'application/json; charset=utf-8; charset=utf-7',
    ]) {
      const headers = { ...MCP_POST_HEADERS, ...limited, 'content-type': contentType };
      const call = await send(url, 'POST', headers, UTF7_DELETE);
      expect(call.arrived, contentType).toEqual([]);
      expect(upstream.deleted, contentType).toEqual([]);
      expect(call.status, contentType).toBe(415);
      expect(JSON.parse(call.body), contentType).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: {
          code: -32000,
          message: 'Unsupported Media Type: Content-Type must be application/json (charset utf-8)',
        },
      });
      const list = await send(url, 'POST', headers, UTF7_LIST);
      expect(list.arrived, contentType).toEqual([]);
      expect(list.body, contentType).not.toContain('delete_user');
      expect(list.status, contentType).toBe(415);
    }
    expect(upstream.deleted).toEqual([]);
  });

  it('refuses every other charset, parameter or media type, and a body without a Content-Type', async () => {
    const body = JSON.stringify(toolCall('echo', { text: 'hi' }));
    const cases: Array<string | undefined> = [
      'application/json; charset=utf-16le',
      'application/json; charset=iso-8859-1',
      'application/json; charset=utf8',
      'application/json; profile=x',
      'application/json; charset=utf-8, text/plain',
      'application/json-seq',
      'text/plain',
      'application/x-www-form-urlencoded',
      undefined,
    ];
    for (const contentType of cases) {
      const headers: Record<string, string> = {
        accept: MCP_POST_HEADERS.accept as string,
        ...limited,
      };
      if (contentType !== undefined) headers['content-type'] = contentType;
      const refused = await send(url, 'POST', headers, body);
      expect(refused.arrived, String(contentType)).toEqual([]);
      expect(refused.status, String(contentType)).toBe(415);
    }
  });

  it('refuses a content-coded body it would not read (415 naming identity), even on a proxy without policies', async () => {
    const gzipped = gzipSync(JSON.stringify(toolCall('delete_user', { id: 'bob' })));
    for (const [target, encoding] of [
      [url, 'gzip'],
      [url, 'deflate, gzip'],
      [plainUrl, 'gzip'],
      [plainUrl, 'br'],
    ] as const) {
      const headers = { ...MCP_POST_HEADERS, ...limited, 'content-encoding': encoding };
      const refused = await send(target, 'POST', headers, gzipped);
      expect(refused.arrived, `${target} ${encoding}`).toEqual([]);
      expect(refused.status, `${target} ${encoding}`).toBe(415);
      expect(refused.headers['accept-encoding'], encoding).toBe('identity');
      expect(JSON.parse(refused.body).error.message).toBe(
        'Unsupported Media Type: Content-Encoding must be identity',
      );
    }
    expect(upstream.deleted).toEqual([]);
  });

  it('refuses a transfer coding other than chunked, whose bytes Node hands over still coded', async () => {
    const gzipped = gzipSync(JSON.stringify(toolCall('delete_user', { id: 'frank' })));
    for (const target of [url, plainUrl]) {
      const { host, pathname } = new URL(target);
      const head = [
        `POST ${pathname} HTTP/1.1`,
        `host: ${host}`,
        'connection: close',
        'content-type: application/json',
        'accept: application/json, text/event-stream',
        `authorization: ${limited.authorization}`,
        'transfer-encoding: gzip, chunked',
      ].join('\r\n');
      const chunked = `${gzipped.length.toString(16)}\r\n${gzipped.toString('latin1')}\r\n0\r\n\r\n`;
      const before = upstream.arrivals.length;
      const status = await rawHttpStatus(target, `${head}\r\n\r\n${chunked}`);
      expect(upstream.arrivals.slice(before), target).toEqual([]);
      expect(status, target).toBe(400);
    }
    expect(upstream.deleted).toEqual([]);
  });

  it('refuses bytes that are not UTF-8, or start with a byte order mark, as a parse error on every proxy', async () => {
    const text = (s: string) => Buffer.from(s, 'latin1');
    const bodies = [
      // An overlong `/`: a lenient decoder reads tools/list.
      Buffer.concat([
        text('{"jsonrpc":"2.0","id":1,"method":"tools'),
        Buffer.from([0xc0, 0xaf]),
        text('list"}'),
      ]),
      Buffer.concat([
        text('{"jsonrpc":"2.0","id":1,"method":"ping","x":"'),
        Buffer.from([0xff]),
        text('"}'),
      ]),
      Buffer.concat([
        Buffer.from([0xef, 0xbb, 0xbf]),
        text('{"jsonrpc":"2.0","id":1,"method":"ping"}'),
      ]),
    ];
    for (const target of [url, plainUrl]) {
      for (const body of bodies) {
        const refused = await send(target, 'POST', { ...MCP_POST_HEADERS, ...limited }, body);
        expect(refused.arrived, target).toEqual([]);
        expect(refused.status, target).toBe(400);
        expect(JSON.parse(refused.body).error.code, target).toBe(-32700);
      }
    }
  });

  it('answers OPTIONS itself, body or not: nothing reaches the upstream, least of all with its credential', async () => {
    const body = JSON.stringify(toolCall('delete_user', { id: 'carol' }));
    for (const target of [url, plainUrl]) {
      const options = await send(target, 'OPTIONS', { 'content-type': 'application/json' }, body);
      expect(options.arrived, target).toEqual([]);
      expect(options.status, target).toBe(204);
      expect(options.headers.allow, target).toBe('GET, POST, DELETE, OPTIONS, HEAD');
      const bare = await send(target, 'OPTIONS', {});
      expect(bare.arrived, target).toEqual([]);
      expect(bare.status, target).toBe(204);
    }
    expect(upstream.deleted).toEqual([]);
  });

  it('lets DELETE end a session only through mcp-auth and never with a body', async () => {
    const body = JSON.stringify(toolCall('delete_user', { id: 'dave' }));
    const json = { 'content-type': 'application/json' };
    const anonymous = await send(url, 'DELETE', json, body);
    expect(anonymous.arrived).toEqual([]);
    expect(anonymous.status).toBe(401);
    // A token mcp-authz would refuse delete_user to, with delete_user as the body.
    const smuggled = await send(url, 'DELETE', { ...json, ...limited }, body);
    expect(smuggled.arrived).toEqual([]);
    expect(smuggled.status).toBe(415);
    expect(JSON.parse(smuggled.body).error.message).toBe(
      'Unsupported Media Type: a DELETE request carries no content',
    );
    // Bodies on GET and HEAD are no more governed than DELETE's.
    for (const method of ['GET', 'HEAD']) {
      const refused = await send(url, method, { ...json, ...limited }, body);
      expect(refused.arrived, method).toEqual([]);
      expect(refused.status, method).toBe(415);
    }
    // Session termination itself goes on, authenticated, with the upstream credential.
    const terminate = await send(url, 'DELETE', { ...limited, 'mcp-session-id': 's-1' });
    expect(terminate.status).not.toBe(401);
    expect(terminate.status).not.toBe(415);
    expect(terminate.arrived).toHaveLength(1);
    expect(terminate.arrived[0]?.method).toBe('DELETE');
    expect(terminate.arrived[0]?.headers['x-gateway-auth']).toBe(UPSTREAM_SECRET);
    expect(terminate.arrived[0]?.headers['content-length'] ?? '0').toBe('0');
    expect(upstream.deleted).toEqual([]);
  });

  it('answers 405 with Allow to every other method', async () => {
    const body = JSON.stringify(toolCall('delete_user', { id: 'erin' }));
    for (const method of ['PUT', 'PATCH', 'TRACE', 'PROPFIND']) {
      const refused = await send(
        url,
        method,
        { ...limited, 'content-type': 'application/json' },
        method === 'TRACE' ? undefined : body,
      );
      expect(refused.arrived, method).toEqual([]);
      expect(refused.status, method).toBe(405);
      expect(refused.headers.allow, method).toBe('GET, POST, DELETE, OPTIONS, HEAD');
      expect(JSON.parse(refused.body), method).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32000, message: 'Method not allowed' },
      });
    }
    expect(upstream.deleted).toEqual([]);
  });
});
