import { isUtf8 } from 'node:buffer';
import { request } from 'node:http';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { seededRandom, useTempDir } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN,
  type GatewayFixture,
  proxyDefinition,
  startTestGateway,
} from './fixtures/gateway.js';
import { CLIENT_ID, type KeyManager, startKeyManager } from './fixtures/key-manager.js';
import { type RawUpstream, startRawUpstream } from './fixtures/raw-upstream.js';
import { type SdkHttpUpstream, startSdkHttpUpstream } from './fixtures/sdk-http-upstream.js';

const tempDir = useTempDir('gw-fuzz-');
const SEED = 0x5eed_14;
const DATA_PLANE_CASES = 400;
const BODY_MEANING_CASES = 200;
const MANAGEMENT_CASES = 250;

/** Helpers over a seeded generator, so a failing case can be replayed from the seed. */
function prng(seed: number) {
  const next = seededRandom(seed);
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)] as T;
  return { next, int, pick };
}
type Random = ReturnType<typeof prng>;

const STRINGS = [
  '',
  'a',
  'tools/call',
  'tools/list',
  '\u0000',
  '\ud800',
  '💥',
  '"',
  '\\',
  'x'.repeat(3000),
  '%00',
  '../..',
  'delete_user',
  '*',
];

function randomJson(r: Random, depth = 0): unknown {
  switch (depth > 4 ? r.int(4) : r.int(8)) {
    case 0:
      return r.pick(STRINGS);
    case 1:
      return r.pick([0, -1, 1e308, -1e-308, 2 ** 53 + 1, 3.14]);
    case 2:
      return r.pick([true, false, null]);
    case 3:
      return r.int(2) ? 'id' : r.int(100);
    case 4:
    case 5:
      return Object.fromEntries(
        Array.from({ length: r.int(5) }, () => [
          r.pick(['jsonrpc', 'id', 'method', 'params', 'name', 'uri', 'result', ...STRINGS]),
          randomJson(r, depth + 1),
        ]),
      );
    default:
      return Array.from({ length: r.int(4) }, () => randomJson(r, depth + 1));
  }
}

function randomBody(r: Random): string | Buffer | undefined {
  switch (r.int(9)) {
    case 0:
      return undefined;
    case 1:
      return Buffer.from(Array.from({ length: r.int(200) }, () => r.int(256)));
    case 2:
      return `${'['.repeat(5000)}${']'.repeat(r.int(2) ? 5000 : 10)}`;
    case 3: {
      const text = JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: r.pick(STRINGS),
        params: randomJson(r),
      });
      return text.slice(0, r.int(text.length + 1));
    }
    case 4:
      return '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}';
    default:
      return JSON.stringify({
        jsonrpc: r.pick(['2.0', '1.0', 2]),
        id: randomJson(r, 3),
        method: r.pick([
          'initialize',
          'ping',
          'tools/list',
          'tools/call',
          'resources/read',
          'prompts/get',
          ...STRINGS,
        ]),
        params: randomJson(r, 1),
      });
  }
}

/** encodeURIComponent, except that a lone surrogate becomes its raw UTF-8 bytes. */
function encode(value: unknown): string {
  try {
    return encodeURIComponent(String(value));
  } catch {
    return '%ED%A0%80';
  }
}

function randomPath(r: Random, known: readonly string[]): string {
  const base = r.pick(known);
  switch (r.int(10)) {
    case 0:
      return `${base}${r.pick(['/', '//', '/.', '/..', '%2F', '?a=%ZZ', '#x', '/%00', ';'])}`;
    case 1:
      return base.replace(/[a-z]/, (c) => `%${c.charCodeAt(0).toString(16)}`);
    case 2:
      return `/${'a/'.repeat(r.int(2000))}mcp`;
    case 3:
      return `/${encode(r.pick(STRINGS))}/mcp`;
    default:
      return base;
  }
}

function randomHeaders(r: Random, authorizations: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  if (r.int(3))
    headers['content-type'] = r.pick([
      'application/json',
      'text/plain',
      'application/json; charset=utf-16',
      'application/json; charset=utf-7',
      'application/json; charset=utf-8; x=y',
      'application/yaml',
      '*/*',
      'x',
    ]);
  if (r.int(2))
    headers.accept = r.pick([
      'application/json, text/event-stream',
      'text/event-stream',
      '*/*',
      '',
    ]);
  if (r.int(2)) headers.authorization = r.pick(authorizations);
  if (r.int(4) === 0)
    headers['mcp-protocol-version'] = r.pick([
      '2025-06-18',
      '2025-11-25',
      '1999-01-01',
      '',
      'x'.repeat(500),
    ]);
  if (r.int(4) === 0)
    headers.origin = r.pick([
      'http://localhost:6274',
      'http://evil.example',
      'null',
      'not a url',
      'file://x',
    ]);
  if (r.int(5) === 0) headers['mcp-session-id'] = r.pick(['s', 'x'.repeat(1000), '%%%']);
  if (r.int(8) === 0) headers['content-encoding'] = r.pick(['gzip', 'br', 'identity']);
  if (r.int(8) === 0)
    headers['access-control-request-method'] = r.pick(['POST', 'DELETE', 'TRACE']);
  return headers;
}

/** A call mcp-authz keeps for a scope the fuzzing caller lacks. */
const DELETE_CALL = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name: 'delete_user', arguments: { id: 'victim' } },
});

const SMUGGLED_BODIES: readonly Buffer[] = [
  Buffer.from(DELETE_CALL.replace('delete_user', 'delete+AF8-user')),
  Buffer.from('{"jsonrpc":"2.0","id":2,"method":"tools+AC8-list"}'),
  Buffer.from(DELETE_CALL, 'utf16le'),
  gzipSync(DELETE_CALL),
  deflateSync(DELETE_CALL),
  brotliCompressSync(DELETE_CALL),
  Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(DELETE_CALL)]),
  // An overlong `/` (C0 AF): a lenient decoder reads tools/call.
  Buffer.from(DELETE_CALL.replace('tools/call', 'tools\xc0\xafcall'), 'latin1'),
  Buffer.from(DELETE_CALL),
];

/**
 * A request whose body may mean one thing to the gateway and another upstream: a charset or
 * parameter the upstream decodes with, a content coding it inflates, bytes that are not UTF-8,
 * or a body on a method whose body no policy reads. `hostile` when the gateway must refuse it
 * (or, for OPTIONS, answer it itself) whatever the proxy's policies.
 */
function smuggledRequest(r: Random) {
  const method = r.pick(['POST', 'POST', 'POST', 'DELETE', 'GET', 'HEAD', 'OPTIONS', 'PUT']);
  const headers: Record<string, string> = { accept: 'application/json, text/event-stream' };
  const contentType = r.pick([
    'application/json; charset=utf-7',
    'application/json;charset="UTF-7"',
    'application/json; charset=utf-16le',
    'application/json; charset=utf-8; charset=utf-7',
    'application/json; charset=iso-8859-1',
    'application/json; x=y',
    'text/plain',
    'application/json',
    'application/json',
    undefined,
  ]);
  if (contentType !== undefined) headers['content-type'] = contentType;
  if (r.int(3) === 0) {
    headers['content-encoding'] = r.pick(['gzip', 'x-gzip', 'deflate', 'br', 'identity, gzip']);
  }
  const body = method === 'OPTIONS' && r.int(2) ? undefined : r.pick(SMUGGLED_BODIES);
  // Node's client frames a GET, HEAD, DELETE or OPTIONS body only when told its length.
  if (body) headers['content-length'] = String(body.length);
  const hostile =
    method !== 'POST' ||
    headers['content-encoding'] !== undefined ||
    contentType !== 'application/json' ||
    !isUtf8(body as Buffer) ||
    body?.[0] === 0xef;
  return { method, headers, body, hostile };
}

/** One request on a fresh connection (a reused one may be closed under it by the last answer). */
function send(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: string | Buffer | undefined,
) {
  const { hostname, port } = new URL(base);
  return new Promise<number>((resolve) => {
    let req: ReturnType<typeof request>;
    try {
      req = request({ host: hostname, port, agent: false, method, path, headers });
    } catch {
      resolve(-1); // the client itself refused the input (an invalid header or path)
      return;
    }
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(res.statusCode ?? 0));
    });
    // The client's parser may refuse what follows an early `Connection: close` answer to a
    // request whose body it was still sending (HPE_*); a reset or a hang-up is a failure.
    req.on('error', (error) => {
      resolve((error as NodeJS.ErrnoException).code?.startsWith('HPE_') ? -1 : -2);
    });
    req.end(body);
  });
}

describe('fuzzing the data plane and the management API (fixed seed, bounded)', () => {
  let upstream: RawUpstream;
  let sdkUpstream: SdkHttpUpstream;
  let km: KeyManager;
  let fx: GatewayFixture;

  beforeAll(async () => {
    sdkUpstream = await startSdkHttpUpstream();
    // An upstream that always answers well, so any 5xx would be the gateway's own.
    upstream = await startRawUpstream((_path, _body, res) => {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end('{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]}}');
    });
    km = await startKeyManager();
    fx = await startTestGateway({ dataDir: tempDir(), keyManager: km });
    const auth = { name: 'mcp-auth', version: 'v1', params: { audiences: [CLIENT_ID] } };
    const authz = {
      name: 'mcp-authz',
      version: 'v1',
      params: { tools: [{ name: 'delete_user', scopes: { allOf: ['d'] } }], filterLists: true },
    };
    const limit = {
      name: 'mcp-ratelimit',
      version: 'v1',
      params: { tools: [{ name: '*', limits: [{ limit: 1000, duration: '1m' }] }] },
    };
    for (const definition of [
      proxyDefinition('scim-v1.0', '/scim', `${upstream.url}/mcp`, [auth, authz, limit]),
      proxyDefinition('open-v1.0', '/open', `${upstream.url}/mcp`, [authz]),
      proxyDefinition('plain-v1.0', '/plain', `${upstream.url}/mcp`),
      proxyDefinition('sdk-v1.0', '/sdk', sdkUpstream.mcpUrl, [auth, authz]),
      proxyDefinition('sdk-plain-v1.0', '/sdk-plain', sdkUpstream.mcpUrl),
    ]) {
      expect((await fx.deploy(definition)).status).toBe(201);
    }
  });
  afterAll(async () => {
    await fx?.gateway.close();
    await Promise.all([upstream?.close(), sdkUpstream?.close(), km?.stop()]);
  });

  it('lets no body reach an SDK upstream that it reads otherwise than the gateway did', async () => {
    const r = prng(SEED + 2);
    // A caller that may not delete: any user the upstream deletes is a policy walked around.
    const tokens = [`Bearer ${await km.sign({ scope: 'mcp' })}`, undefined];
    const failures: string[] = [];
    for (let i = 0; i < BODY_MEANING_CASES; i++) {
      const { method, headers, body, hostile } = smuggledRequest(r);
      const authorization = r.pick(tokens);
      // Without policies a proxy forwards what it can read (delete_user included), so that
      // proxy gets only what it must refuse.
      const path = hostile && r.int(2) ? '/sdk-plain/mcp' : '/sdk/mcp';
      const caller = authorization ? 'with a token' : 'anonymous';
      const label = (status: number, arrived: number) =>
        `#${i} ${method} ${path} ${JSON.stringify(headers)} ${caller} → ${status}, ${arrived} upstream`;
      const before = sdkUpstream.arrivals.length;
      const decodedBefore = sdkUpstream.decoded.length;
      const sent = authorization ? { ...headers, authorization } : headers;
      const status = await send(fx.gateway.plainUrl, method, path, sent, body);
      const arrived = sdkUpstream.arrivals.length - before;
      if (hostile) {
        const answered = method === 'OPTIONS' ? status === 204 : status >= 400 && status < 500;
        if (!answered || arrived !== 0) failures.push(label(status, arrived));
      } else if (status >= 500 || status <= 0) {
        failures.push(label(status, arrived));
      } else if (arrived > 0) {
        // What went through is read upstream exactly as the gateway read it.
        const upstreamRead = sdkUpstream.decoded.slice(decodedBefore);
        const gatewayRead = JSON.parse((body as Buffer).toString('utf8'));
        if (JSON.stringify(upstreamRead) !== JSON.stringify([gatewayRead])) {
          failures.push(label(status, arrived));
        }
      }
    }
    expect(failures).toEqual([]);
    expect(sdkUpstream.deleted).toEqual([]);
  }, 60_000);

  it('never answers 5xx on the data plane and keeps serving', async () => {
    const r = prng(SEED);
    const token = await km.sign({ scope: 'd' });
    const authorizations = [
      `Bearer ${token}`,
      'Bearer x.y.z',
      'Bearer',
      'Basic YTpi',
      `Bearer ${token.slice(0, -3)}abc`,
      `bearer   ${token}`,
    ];
    const known = [
      '/scim/mcp',
      '/open/mcp',
      '/plain/mcp',
      '/.well-known/oauth-protected-resource/scim/mcp',
      '/scim/.well-known/oauth-protected-resource',
      '/nope/mcp',
      '/_gateway-health/healthy',
    ];
    const failures: string[] = [];
    for (let i = 0; i < DATA_PLANE_CASES; i++) {
      const method = r.pick([
        'GET',
        'POST',
        'POST',
        'POST',
        'DELETE',
        'OPTIONS',
        'PUT',
        'PATCH',
        'HEAD',
      ]);
      const path = randomPath(r, known);
      const headers = randomHeaders(r, authorizations);
      const body = method === 'GET' || method === 'HEAD' ? undefined : randomBody(r);
      const status = await send(fx.gateway.plainUrl, method, path, headers, body);
      if (status >= 500 || status === 0 || status === -2)
        failures.push(`#${i} ${method} ${path.slice(0, 80)} → ${status}`);
    }
    expect(failures).toEqual([]);
    const health = await fetch(`${fx.gateway.plainUrl}/_gateway-health/healthy`);
    expect(health.status).toBe(200);
  }, 60_000);

  it('never answers 5xx on the management API and keeps serving', async () => {
    const r = prng(SEED + 1);
    // Sign in once, so the remembered credential is not caught by the failed-login throttle.
    expect((await fx.management('/api/management/v1/mcp-proxies')).status).toBe(200);
    const valid = proxyDefinition('fuzz-v1.0', '/fuzz', `${upstream.url}/mcp`);
    const mutate = (): unknown => {
      const copy = JSON.parse(JSON.stringify(valid)) as Record<string, unknown>;
      const spec = copy.spec as Record<string, unknown>;
      const keys = ['apiVersion', 'kind', 'metadata', 'spec'];
      for (let n = r.int(4); n >= 0; n--) {
        const target = r.int(2) ? copy : spec;
        const key =
          target === copy
            ? r.pick(keys)
            : r.pick([...Object.keys(spec), 'upstream', 'policies', 'vhost']);
        target[key] = randomJson(r, 2);
      }
      if (r.int(3) === 0) {
        spec.policies = [
          {
            name: r.pick(['mcp-auth', 'mcp-authz', 'mcp-ratelimit', 'x']),
            version: r.pick(['v1', 'v2', 1]),
            params: randomJson(r, 1),
          },
        ];
      }
      if (r.int(4) === 0) spec.upstream = { url: `${upstream.url}/mcp`, auth: randomJson(r, 2) };
      return copy;
    };
    const paths = [
      '/api/management/v1/mcp-proxies',
      '/api/management/v1/mcp-proxies/fuzz-v1.0',
      '/metrics',
    ];
    const authorizations = [ADMIN, ADMIN, ADMIN, 'Basic !!!', 'Basic YWRtaW4=', 'Bearer x', ''];
    const failures: string[] = [];
    for (let i = 0; i < MANAGEMENT_CASES; i++) {
      const method = r.pick(['GET', 'POST', 'PUT', 'DELETE', 'PATCH']);
      let path = randomPath(r, paths);
      if (r.int(4) === 0)
        path += `?displayName=${encode(r.pick(STRINGS))}&status=${r.pick(['deployed', 'x'])}`;
      const headers: Record<string, string> = {
        'content-type': r.pick(['application/json', 'application/yaml', 'text/plain', 'x/y']),
      };
      const authorization = r.pick(authorizations);
      if (authorization) headers.authorization = authorization;
      let body: string | Buffer | undefined;
      if (method === 'POST' || method === 'PUT') {
        body = r.int(4) === 0 ? randomBody(r) : JSON.stringify(mutate());
        if (r.int(5) === 0 && typeof body === 'string') body = `a: [${body}\n  - &x *x`;
      }
      const status = await send(fx.gateway.managementUrl, method, path, headers, body);
      if (status >= 500 || status === 0 || status === -2)
        failures.push(`#${i} ${method} ${path.slice(0, 80)} → ${status}`);
    }
    expect(failures).toEqual([]);
    expect((await fx.management('/api/management/v1/mcp-proxies')).status).toBe(200);
    const health = await fetch(`${fx.gateway.plainUrl}/_gateway-health/healthy`);
    expect(health.status).toBe(200);
  }, 60_000);
});
