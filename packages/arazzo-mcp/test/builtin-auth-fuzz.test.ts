import { createHash } from 'node:crypto';
import { AccountStore } from '@mcp-identity/arazzo-mcp';
import { AUTHORIZATION_REQUEST_PARAMETERS, type RunningServer } from '@mcp-identity/common';
import { rawHttpStatus, seededRandom, useTempDir } from '@mcp-identity/common/testing';
import { loginFormFields } from '@mcp-identity/oauth';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBuiltinServer } from './support/builtin-server.js';

/**
 * Malformed input to every public endpoint of Area A must get a 4xx (or a 2xx/3xx), never a
 * 5xx, and the process must keep serving. Fixed seed, so a failure reproduces; bounded in
 * iterations and time.
 */
const SEED = 0x5eed_a11a;
const ITERATIONS = Number(process.env.FUZZ_ITERATIONS ?? 1500);
const TIME_BUDGET_MS = 40_000;
const CONCURRENCY = 8;
const REQUEST_TIMEOUT_MS = 10_000;

const tempDir = useTempDir('arazzo-mcp-fuzz-');
let server: RunningServer;
let pool: Pool;
let clientId = '';
const REDIRECT_URI = 'http://127.0.0.1:8976/callback';
const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGcSuJZ-cM';

beforeAll(async () => {
  server = await startBuiltinServer(tempDir(), {
    dataDir: tempDir(),
    trustProxy: true,
    initialAccountEmail: 'fuzz@example.com',
    onInitialAccount: () => {},
  });
  pool = new Pool(server.url, { connections: CONCURRENCY });
  const registered = await fetch(`${server.url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: [REDIRECT_URI] }),
  });
  clientId = ((await registered.json()) as { client_id: string }).client_id;
});

afterAll(async () => {
  await pool?.close();
  await server?.close();
});

/** Helpers over a seeded generator, so a failing case can be replayed from the seed. */
function prng(seed: number) {
  const next = seededRandom(seed);
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)] as T;
  return { next, int, pick, chance: (p: number) => next() < p };
}
type Random = ReturnType<typeof prng>;

const PATHS = [
  '/.well-known/oauth-protected-resource',
  '/.well-known/oauth-protected-resource/mcp',
  '/.well-known/oauth-authorization-server',
  '/.well-known/openid-configuration',
  '/oauth/register',
  '/oauth/authorize',
  '/oauth/token',
  '/oauth/jwks',
  '/api/auth/login',
  '/api/auth/me',
  '/mcp',
  '/health',
];
const METHODS = ['GET', 'POST', 'POST', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'];
const CONTENT_TYPES = [
  undefined,
  'application/json',
  'application/json; charset=utf-8',
  'application/x-www-form-urlencoded',
  'application/x-www-form-urlencoded; charset=iso-8859-1',
  'text/plain',
  'multipart/form-data; boundary=x',
  'application/octet-stream',
  'application/json; charset=utf-16',
  ';;;',
];
const PARAM_NAMES = [
  ...AUTHORIZATION_REQUEST_PARAMETERS,
  'csrf_token',
  'email',
  'password',
  'grant_type',
  'code',
  'code_verifier',
  'refresh_token',
  'redirect_uris',
  'client_name',
  'logo_uri',
  'client_uri',
  '__proto__',
  'constructor',
  'toString',
];

/** Strings that have broken parsers before. */
function nastyString(r: Random): string {
  const pieces = [
    '',
    ' ',
    '%',
    '%zz',
    '%00',
    '\u0000',
    '\ud800',
    '😀',
    '<script>alert(1)</script>',
    '"\'><',
    'a'.repeat(r.int(5000)),
    'x'.repeat(70_000),
    REDIRECT_URI,
    clientId,
    CHALLENGE,
    'S256',
    'code',
    'authorization_code',
    'refresh_token',
    'view-source:https://x/',
    'https://user:pw@x/',
    'javascript:alert(1)',
    '1e308',
    '-1',
    'NaN',
    'null',
    'true',
    '{}',
    '[]',
    '__proto__',
    `${server?.url}/mcp`,
  ];
  let value = '';
  const count = 1 + r.int(3);
  for (let i = 0; i < count; i += 1) value += r.pick(pieces);
  return value;
}

function randomJson(r: Random, depth = 0): unknown {
  const kind = r.int(depth > 2 ? 4 : 7);
  switch (kind) {
    case 0:
      return nastyString(r);
    case 1:
      return r.pick([0, -1, 1e308, Number.MAX_SAFE_INTEGER, 0.5]);
    case 2:
      return r.pick([true, false, null]);
    case 3:
      return r.chance(0.5) ? [REDIRECT_URI] : [];
    case 4:
      return Array.from({ length: r.int(5) }, () => randomJson(r, depth + 1));
    default: {
      const object: Record<string, unknown> = {};
      for (let i = r.int(6); i > 0; i -= 1) object[r.pick(PARAM_NAMES)] = randomJson(r, depth + 1);
      return object;
    }
  }
}

function randomForm(r: Random): string {
  const params: string[] = [];
  for (let i = r.int(8); i > 0; i -= 1) {
    const name = r.chance(0.9) ? r.pick(PARAM_NAMES) : nastyString(r);
    const value = nastyString(r);
    params.push(
      r.chance(0.1) ? `${name}=${value}` : new URLSearchParams([[name, value]]).toString(),
    );
  }
  return params.join('&');
}

function validAuthorizeParams(): Record<string, string> {
  return {
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    code_challenge: CHALLENGE,
    code_challenge_method: 'S256',
    state: 'fuzz',
  };
}

/** A valid parameter set with a few parameters replaced, dropped or repeated. */
function mutatedParams(r: Random, base: Record<string, string>): string {
  const out: Array<[string, string]> = [];
  for (const [name, value] of Object.entries(base)) {
    const roll = r.next();
    if (roll < 0.1) continue;
    out.push([name, roll < 0.25 ? nastyString(r) : value]);
    if (r.chance(0.05)) out.push([name, value]);
  }
  if (r.chance(0.3)) out.push([r.pick(PARAM_NAMES), nastyString(r)]);
  return new URLSearchParams(out).toString();
}

/**
 * Percent-encodes what may not appear raw in a request target (non-ASCII, controls, spaces,
 * quotes): undici refuses such paths, and a refusal can leave its pool stuck. Malformed
 * escapes such as `%zz` stay.
 */
function asciiOnly(text: string): string {
  return text.replace(/[^\x21-\x7e]|["<>\\^`{|}]/gu, (char) =>
    [...Buffer.from(char)]
      .map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`)
      .join(''),
  );
}

interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

function pathVariant(r: Random, path: string): string {
  switch (r.int(8)) {
    case 0:
      return path.replace(/[a-z]/, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
    case 1:
      return `${path}/`;
    case 2:
      return `/${path}`;
    case 3:
      return `${path}%`;
    case 4:
      return `${path}/..%2f..%2f`;
    default:
      return path;
  }
}

/** Header values are ASCII: undici refuses others before sending. */
function randomHeaders(r: Random): Record<string, string> {
  const headers: Record<string, string> = {};
  if (r.chance(0.3)) headers['x-forwarded-for'] = `10.${r.int(256)}.${r.int(256)}.${r.int(256)}`;
  if (r.chance(0.1)) {
    headers['x-forwarded-host'] = r.pick(['evil.example', 'a b', '%zz', 'x:99999', ',', '[::1]:1']);
  }
  if (r.chance(0.1)) headers['x-forwarded-proto'] = r.pick(['https', 'ftp', '', 'http,https']);
  if (r.chance(0.1)) headers['x-forwarded-prefix'] = r.pick(['/base', '..', '%2e%2e', '//x']);
  if (r.chance(0.15)) headers.host = r.pick(['evil.example', 'a_b', 'x:99999', 'localhost:0']);
  if (r.chance(0.2)) {
    headers.origin = r.pick(['http://evil.example', 'null', 'http://localhost:1', '%']);
  }
  if (r.chance(0.2)) {
    headers.authorization = r.pick([
      'Bearer',
      'Bearer x.y.z',
      `Bearer ${'A'.repeat(r.int(9000))}`,
      'Basic Zm9vOmJhcg==',
      'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.',
      'Bearer eyJhbGciOiJFUzI1NiIsImtpZCI6Ilx1MDAwMCJ9.e30.AAAA',
    ]);
  }
  if (r.chance(0.3)) headers['mcp-protocol-version'] = r.pick(['2025-06-18', 'garbage', '']);
  if (r.chance(0.5)) {
    headers.accept = r.pick(['application/json, text/event-stream', '*/*', 'text/html']);
  }
  return headers;
}

function randomBody(r: Random): string | Buffer {
  switch (r.int(5)) {
    case 0:
      return JSON.stringify(randomJson(r));
    case 1:
      return randomForm(r);
    case 2:
      return Buffer.from(Array.from({ length: r.int(300) }, () => r.int(256)));
    case 3:
      return JSON.stringify({
        jsonrpc: '2.0',
        id: r.pick([1, null, 'x', {}, []]),
        method: r.pick(['initialize', 'tools/list', 'tools/call', 'ping', nastyString(r)]),
        params: randomJson(r),
      });
    default:
      return nastyString(r);
  }
}

async function generate(r: Random): Promise<FuzzRequest> {
  const headers = randomHeaders(r);
  // Two thirds of the requests start from a valid one, so that deep code paths are reached.
  const flavour = r.int(9);
  if (flavour === 0) {
    const query = mutatedParams(r, validAuthorizeParams());
    return { method: 'GET', path: `/oauth/authorize?${query}`, headers };
  }
  if (flavour === 1) {
    const form = await fetch(
      `${server.url}/oauth/authorize?${new URLSearchParams(validAuthorizeParams())}`,
      { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) },
    );
    const fields = {
      ...loginFormFields(await form.text()),
      email: 'fuzz@example.com',
      password: 'wrong password',
    };
    headers['content-type'] = 'application/x-www-form-urlencoded';
    return { method: 'POST', path: '/oauth/authorize', headers, body: mutatedParams(r, fields) };
  }
  if (flavour === 2) {
    headers['content-type'] = r.pick(CONTENT_TYPES) ?? 'application/x-www-form-urlencoded';
    const grant: Record<string, string> = r.chance(0.5)
      ? {
          grant_type: 'authorization_code',
          code: 'A'.repeat(43),
          client_id: clientId,
          redirect_uri: REDIRECT_URI,
          code_verifier: 'v'.repeat(43),
        }
      : { grant_type: 'refresh_token', refresh_token: 'R'.repeat(43), client_id: clientId };
    return { method: 'POST', path: '/oauth/token', headers, body: mutatedParams(r, grant) };
  }
  if (flavour === 3) {
    headers['content-type'] = r.chance(0.8) ? 'application/json' : (r.pick(CONTENT_TYPES) ?? '');
    const body = { email: r.chance(0.7) ? nastyString(r) : randomJson(r), password: randomJson(r) };
    return { method: 'POST', path: '/api/auth/login', headers, body: JSON.stringify(body) };
  }
  if (flavour === 4) {
    headers['content-type'] = r.chance(0.8) ? 'application/json' : (r.pick(CONTENT_TYPES) ?? '');
    const body: Record<string, unknown> = {
      redirect_uris: r.chance(0.5) ? [REDIRECT_URI, nastyString(r)] : randomJson(r),
    };
    for (const field of ['client_name', 'logo_uri', 'client_uri']) {
      if (r.chance(0.5)) body[field] = r.chance(0.7) ? nastyString(r) : randomJson(r);
    }
    return { method: 'POST', path: '/oauth/register', headers, body: JSON.stringify(body) };
  }
  if (flavour === 5) {
    headers['content-type'] = r.chance(0.8) ? 'application/json' : (r.pick(CONTENT_TYPES) ?? '');
    headers.accept ??= 'application/json, text/event-stream';
    return { method: 'POST', path: '/mcp', headers, body: randomBody(r) };
  }
  const method = r.pick(METHODS);
  let path = pathVariant(r, r.pick(PATHS));
  if (r.chance(0.4)) path += `?${asciiOnly(randomForm(r))}`;
  const request: FuzzRequest = { method, path, headers };
  if (method !== 'GET' && method !== 'HEAD' && r.chance(0.9)) {
    const contentType = r.pick(CONTENT_TYPES);
    if (contentType !== undefined) headers['content-type'] = contentType;
    request.body = randomBody(r);
  }
  return request;
}

function describeRequest(request: FuzzRequest): string {
  const headers = JSON.stringify(request.headers).slice(0, 300);
  const body = String(request.body ?? '').slice(0, 300);
  return `${request.method} ${request.path.slice(0, 200)} ${headers} ${body}`;
}

describe('Area A public surface under fuzzing', () => {
  it(
    'never answers 5xx and keeps serving',
    async () => {
      const random = prng(SEED);
      const deadline = Date.now() + TIME_BUDGET_MS;
      const failures: string[] = [];
      let sent = 0;
      let issued = 0;
      const worker = async () => {
        while (issued < ITERATIONS && Date.now() < deadline) {
          issued += 1;
          const request = await generate(random);
          let status: number;
          try {
            const response = await pool.request({
              method: request.method as 'GET',
              path: request.path,
              headers: request.headers,
              body: request.body,
              headersTimeout: REQUEST_TIMEOUT_MS,
              bodyTimeout: REQUEST_TIMEOUT_MS,
            });
            status = response.statusCode;
            await response.body.dump();
          } catch (error) {
            const code = (error as { code?: string }).code ?? '';
            // A request the server never answers is a failure; one the client refused to
            // send (a path with characters HTTP does not allow) is not a server answer.
            if (code.includes('TIMEOUT') || code === 'UND_ERR_SOCKET') {
              failures.push(`${code} ${describeRequest(request)}`);
            }
            continue;
          }
          sent += 1;
          if (status >= 500) failures.push(`${status} ${describeRequest(request)}`);
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
      expect(failures).toEqual([]);
      expect(sent).toBeGreaterThan(Math.min(issued, ITERATIONS) / 2);
      const health = await fetch(`${server.url}/health`);
      expect(health.status).toBe(200);
    },
    TIME_BUDGET_MS + 30_000,
  );

  // undici will not send these Host headers (it asserts on bracketed ones), so they go over
  // a raw socket; Node's parser or the issuer resolver must answer them with a 4xx.
  it.each(['[::1', '[::1]:7', '', 'a b', '%zz', 'x'.repeat(5000)])(
    'answers a malformed Host header (%#) with a status below 500',
    async (host) => {
      const lines = [
        'GET /.well-known/oauth-authorization-server',
        'GET /oauth/authorize',
        'POST /oauth/register',
        'POST /mcp',
      ];
      const statuses = await Promise.all(
        lines.map((line) =>
          rawHttpStatus(
            server.url,
            `${line} HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
            REQUEST_TIMEOUT_MS,
          ),
        ),
      );
      for (const status of statuses) {
        expect(status).toBeGreaterThanOrEqual(200);
        expect(status).toBeLessThan(500);
      }
    },
  );
});

/**
 * The classes of malformed input issue 36 found (NUL bytes, Content-Types without a valid
 * `type/subtype` or with a charset, floods), each sent to every endpoint it applies to: every
 * answer is a 4xx in the endpoint's own shape, and the state a user depends on is unchanged —
 * the accounts, a registered client, a refresh-token family, the account's sign-in.
 */
describe('Area A under malformed input by class: 4xx, state unchanged', () => {
  let target: RunningServer;
  const dataDir = tempDir();
  let password = '';
  let client = '';
  let refreshToken = '';
  const EMAIL = 'classes@example.com';
  /** Each class from its own forwarded address, so that one's rate limits never hide another. */
  const from = (address: string) => ({ 'x-forwarded-for': address });

  beforeAll(async () => {
    target = await startBuiltinServer(tempDir(), {
      dataDir,
      trustProxy: true,
      initialAccountEmail: EMAIL,
      onInitialAccount: (account) => {
        password = account.password;
      },
    });
    const registration = await fetch(`${target.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT_URI] }),
    });
    client = ((await registration.json()) as { client_id: string }).client_id;
    refreshToken = (await signIn()).refresh_token;
  });
  afterAll(() => target?.close());

  function authorizeParams(): Record<string, string> {
    return { ...validAuthorizeParams(), client_id: client };
  }

  /** Form, sign-in and code exchange, from a fixed address of its own. */
  async function signIn(): Promise<{ refresh_token: string }> {
    const headers = from('192.0.2.10');
    const verifier = 'state-unchanged-verifier-'.padEnd(43, 'x');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const params = { ...authorizeParams(), code_challenge: challenge };
    const page = await fetch(`${target.url}/oauth/authorize?${new URLSearchParams(params)}`, {
      headers,
    });
    const login = await fetch(`${target.url}/oauth/authorize`, {
      method: 'POST',
      headers,
      body: new URLSearchParams({ ...loginFormFields(await page.text()), email: EMAIL, password }),
      redirect: 'manual',
    });
    const code = new URL(login.headers.get('location') as string).searchParams.get('code');
    const token = await fetch(`${target.url}/oauth/token`, {
      method: 'POST',
      headers,
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: code as string,
        client_id: client,
        redirect_uri: REDIRECT_URI,
        code_verifier: verifier,
      }),
    });
    expect(token.status).toBe(200);
    return (await token.json()) as { refresh_token: string };
  }

  /** The accounts, the client, the refresh-token family and the sign-in, as before the class. */
  async function expectStateUnchanged(): Promise<void> {
    const accounts = AccountStore.open(dataDir);
    try {
      expect(accounts.list().map((account) => account.email)).toEqual([EMAIL]);
    } finally {
      accounts.close();
    }
    const headers = from('192.0.2.11');
    const page = await fetch(
      `${target.url}/oauth/authorize?${new URLSearchParams(authorizeParams())}`,
      {
        headers,
      },
    );
    expect(page.status).toBe(200);
    const refreshed = await fetch(`${target.url}/oauth/token`, {
      method: 'POST',
      headers,
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: refreshToken,
        client_id: client,
      }),
    });
    expect(refreshed.status).toBe(200);
    refreshToken = ((await refreshed.json()) as { refresh_token: string }).refresh_token;
    const login = await fetch(`${target.url}/api/auth/login`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ email: EMAIL, password }),
    });
    expect(login.status).toBe(200);
  }

  type Probe = { name: string; send: () => Promise<Response> };

  async function expectAll4xx(probes: Probe[]): Promise<void> {
    const answers: string[] = [];
    for (const probe of probes) {
      const response = await probe.send();
      await response.arrayBuffer();
      if (response.status < 400 || response.status >= 500) {
        answers.push(`${probe.name}: ${response.status}`);
      }
    }
    expect(answers).toEqual([]);
    await expectStateUnchanged();
  }

  it('answers a NUL byte in any parameter of any endpoint with a 4xx', async () => {
    const headers = from('198.51.100.1');
    const withNul = (params: Record<string, string>, name: string) => ({
      ...params,
      [name]: `${params[name] ?? ''}\u0000`,
    });
    const authorize = authorizeParams();
    const form = async () => {
      const page = await fetch(`${target.url}/oauth/authorize?${new URLSearchParams(authorize)}`, {
        headers,
      });
      return { ...loginFormFields(await page.text()), email: EMAIL, password };
    };
    const grants: Record<string, string>[] = [
      {
        grant_type: 'authorization_code',
        code: 'A'.repeat(43),
        client_id: client,
        redirect_uri: REDIRECT_URI,
        code_verifier: 'v'.repeat(43),
      },
      { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: client },
    ];
    const post = (path: string, body: string, contentType: string) => () =>
      fetch(`${target.url}${path}`, {
        method: 'POST',
        headers: { ...headers, 'content-type': contentType },
        body,
        redirect: 'manual',
      });
    const formType = 'application/x-www-form-urlencoded';
    await expectAll4xx([
      ...Object.keys(authorize).map((name) => ({
        name: `GET /oauth/authorize ${name}`,
        send: () =>
          fetch(`${target.url}/oauth/authorize?${new URLSearchParams(withNul(authorize, name))}`, {
            headers,
          }),
      })),
      ...['email', 'state', 'client_id'].map((name) => ({
        name: `POST /oauth/authorize ${name}`,
        send: async () =>
          post(
            '/oauth/authorize',
            new URLSearchParams(withNul(await form(), name)).toString(),
            formType,
          )(),
      })),
      ...grants.flatMap((grant) =>
        Object.keys(grant).map((name) => ({
          name: `POST /oauth/token ${grant.grant_type} ${name}`,
          send: post(
            '/oauth/token',
            new URLSearchParams(withNul(grant, name)).toString(),
            formType,
          ),
        })),
      ),
      ...['email', 'password'].map((name) => ({
        name: `POST /api/auth/login ${name}`,
        send: post(
          '/api/auth/login',
          JSON.stringify(withNul({ email: EMAIL, password: 'wrong password' }, name)),
          'application/json',
        ),
      })),
      {
        name: 'POST /oauth/register redirect_uris',
        send: post(
          '/oauth/register',
          JSON.stringify({ redirect_uris: [`${REDIRECT_URI}\u0000`] }),
          'application/json',
        ),
      },
    ]);
  });

  it('answers a Content-Type without a valid type/subtype, or of the wrong kind, with a 4xx', async () => {
    const headers = from('198.51.100.2');
    const contentTypes = [
      ';;;',
      '/',
      'application/',
      'text/plain',
      'application/json; charset=utf-7',
      'multipart/form-data; boundary=x',
      'application/octet-stream',
      'application/x-www-form-urlencoded; charset=utf-16',
      'application/x-www-form-urlencoded; charset="utf-7"',
    ];
    const token = new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      client_id: client,
    }).toString();
    const login = JSON.stringify({ email: EMAIL, password });
    const send = (path: string, contentType: string, body: string) => () =>
      fetch(`${target.url}${path}`, {
        method: 'POST',
        headers: { ...headers, 'content-type': contentType },
        body,
        redirect: 'manual',
      });
    await expectAll4xx(
      contentTypes.flatMap((contentType) => [
        { name: `token ${contentType}`, send: send('/oauth/token', contentType, token) },
        { name: `login ${contentType}`, send: send('/api/auth/login', contentType, login) },
        {
          name: `authorize ${contentType}`,
          send: send(
            '/oauth/authorize',
            contentType,
            new URLSearchParams(authorizeParams()).toString(),
          ),
        },
      ]),
    );
  });

  it('answers floods from one address with 429 beyond each limit, and serves everyone else', async () => {
    const headers = from('198.51.100.3');
    const statuses = async (count: number, send: () => Promise<Response>) => {
      const seen = new Map<number, number>();
      for (let i = 0; i < count; i += 1) {
        const response = await send();
        await response.arrayBuffer();
        seen.set(response.status, (seen.get(response.status) ?? 0) + 1);
      }
      return Object.fromEntries(seen);
    };
    const query = new URLSearchParams(authorizeParams());
    expect(
      await statuses(130, () => fetch(`${target.url}/oauth/authorize?${query}`, { headers })),
    ).toEqual({ 200: 120, 429: 10 });
    expect(
      await statuses(25, () =>
        fetch(`${target.url}/oauth/register`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: '{}',
        }),
      ),
    ).toEqual({ 200: 20, 429: 5 });
    expect(
      await statuses(25, () =>
        fetch(`${target.url}/api/auth/login`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ email: 'nobody@example.com', password: 'wrong password' }),
        }),
      ),
    ).toEqual({ 401: 5, 429: 20 });
    await expectStateUnchanged();
  });
});
