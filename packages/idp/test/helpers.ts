import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { createLogger } from '@mcp-identity/common';
import { type LoopbackClient, loopbackClient, useTempDir } from '@mcp-identity/common/testing';
import { KNOWN_SCOPES, type RunningIdp, startIdp } from '@mcp-identity/idp';
import { afterAll } from 'vitest';

export const ALL_SCOPES = [...KNOWN_SCOPES];
export const SCIM_JSON = 'application/scim+json';

export type TestIdp = RunningIdp & {
  /** A client-credentials token for an app authorized on every scope, narrowed to `scopes`. */
  token(scopes: readonly string[]): Promise<string>;
  scim(
    method: string,
    path: string,
    options?: { token?: string; body?: unknown; type?: string; headers?: Record<string, string> },
  ): Promise<{
    status: number;
    headers: Headers;
    /** The parsed JSON body; empty when the response had none. */
    body: Record<string, unknown>;
    text: string;
  }>;
  /** A token holding every scope. */
  admin: RunningIdp['admin'];
  adminToken: string;
};

const BIN = fileURLToPath(new URL('../src/bin.ts', import.meta.url));

/** Runs the real `idp` command as a child process. */
export function runIdpCommand(
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', BIN, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LOG_LEVEL: 'warn' },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

export const ADMIN_CLIENT = { clientId: 'admin-app', clientSecret: 'admin-secret-value' };

/** Starts an IdP over plain HTTP on 127.0.0.1:0 with a fresh data dir, closed after the file. */
export async function startTestIdp(
  extra: Partial<Parameters<typeof startIdp>[0]> = {},
): Promise<TestIdp> {
  const tempDir = useTempDir('idp-test-');
  const idp = await startIdp({
    dataDir: tempDir(),
    http: true,
    port: 0,
    logger: createLogger({ level: 'silent' }),
    bootstrap: {
      customAttributes: [
        { name: 'customerTier', type: 'string' },
        { name: 'contractEndDate', type: 'string' },
      ],
      applications: [
        { name: 'admin', ...ADMIN_CLIENT, scopes: '*', grantTypes: ['client_credentials'] },
      ],
    },
    ...extra,
    // Tests sign in and register clients far more often than a person would.
    limits: {
      registrationsPerIpPerHour: 10_000,
      registrationsPerNetworkPerHour: 10_000,
      authorizeRequestsPerIpPerMinute: 10_000,
      authorizeRequestsPerNetworkPerMinute: 10_000,
      loginAttemptsPerIp: 10_000,
      ...extra.limits,
    },
  });
  afterAll(() => idp.close());
  const token = async (scopes: readonly string[]) => {
    const response = await fetch(`${idp.url}/oauth2/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${ADMIN_CLIENT.clientId}:${ADMIN_CLIENT.clientSecret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: scopes.join(' ') }),
    });
    if (response.status !== 200) throw new Error(`token request failed: ${response.status}`);
    return ((await response.json()) as { access_token: string }).access_token;
  };
  const adminToken = await token(ALL_SCOPES);
  const scim: TestIdp['scim'] = async (method, path, options = {}) => {
    const headers: Record<string, string> = { ...options.headers };
    const bearer = options.token === undefined ? adminToken : options.token;
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    let body: string | undefined;
    if (options.body !== undefined) {
      headers['content-type'] = options.type ?? SCIM_JSON;
      body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    }
    const response = await fetch(`${idp.url}/scim2${path}`, { method, headers, body });
    const text = await response.text();
    return {
      status: response.status,
      headers: response.headers,
      body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
      text,
    };
  };
  return Object.assign(idp, { token, scim, adminToken });
}

export function userBody(userName: string, extra: Record<string, unknown> = {}) {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName,
    password: 'Passw0rd!',
    name: { givenName: userName, familyName: 'Tester' },
    emails: [{ value: `${userName}@example.com`, primary: true }],
    ...extra,
  };
}

export const TEST_REDIRECT_URI = 'http://127.0.0.1:8765/callback';

/** `Content-Type` values that are no `type/subtype` (RFC 9110 §8.3.1). */
export const MALFORMED_CONTENT_TYPES = [
  'foo',
  'application/',
  '/json',
  'a b/c',
  ';',
  'application/json/x',
  '=; charset=utf-8',
  'text/ plain',
];

export type UserTokens = {
  access_token: string;
  refresh_token: string;
  scope: string;
  clientId: string;
};

/** Registers a public client anonymously (RFC 7591) and returns its client id. */
export async function registerClient(idp: RunningIdp, name = 'test client'): Promise<string> {
  const response = await fetch(`${idp.url}/oauth2/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: [TEST_REDIRECT_URI], client_name: name }),
  });
  if (response.status !== 201) throw new Error(`registration failed: ${response.status}`);
  return ((await response.json()) as { client_id: string }).client_id;
}

/** A login form as a browser holds it: the CSRF token in the page and the cookie beside it. */
export interface LoginForm {
  csrf: string;
  cookie: string;
}

/** GETs the login form of an authorize request. */
export async function fetchLoginForm(
  idp: RunningIdp,
  params: Record<string, string>,
): Promise<LoginForm> {
  const page = await fetch(`${idp.url}/oauth2/authorize?${new URLSearchParams(params)}`);
  const html = await page.text();
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(html)?.[1];
  if (!csrf) throw new Error(`no login form (${page.status})`);
  return { csrf, cookie: page.headers.get('set-cookie')?.split(';')[0] ?? '' };
}

/** POSTs a login form with the given credentials. */
export function postLoginForm(
  idp: RunningIdp,
  params: Record<string, string>,
  { csrf, cookie }: LoginForm,
  credentials: { userName: string; password: string },
): Promise<Response> {
  return fetch(`${idp.url}/oauth2/authorize`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
    body: new URLSearchParams({
      ...params,
      csrf_token: csrf,
      username: credentials.userName,
      password: credentials.password,
    }),
  });
}

/** Runs the login form (GET, then POST with its CSRF token) and returns the response. */
export async function postLogin(
  idp: RunningIdp,
  params: Record<string, string>,
  credentials: { userName: string; password: string },
): Promise<Response> {
  return postLoginForm(idp, params, await fetchLoginForm(idp, params), credentials);
}

/** A PKCE pair and the authorize parameters of one login. */
export function authorizeRequest(
  clientId: string,
  scope: string,
  extra: Record<string, string> = {},
) {
  const verifier = randomBytes(32).toString('base64url');
  const params = {
    client_id: clientId,
    redirect_uri: TEST_REDIRECT_URI,
    response_type: 'code',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    state: 'st',
    scope,
    ...extra,
  };
  return { verifier, params };
}

/** POSTs a form to the token endpoint. */
export async function tokenRequest(
  idp: RunningIdp,
  values: Record<string, string>,
): Promise<{ status: number; body: Record<string, string> }> {
  const response = await fetch(`${idp.url}/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(values),
  });
  return { status: response.status, body: (await response.json()) as Record<string, string> };
}

/** Redeems an authorization code issued to the public client `clientId` at TEST_REDIRECT_URI. */
export function redeemCode(
  idp: RunningIdp,
  grant: { code: string; clientId: string; verifier: string; extra?: Record<string, string> },
): Promise<{ status: number; body: Record<string, string> }> {
  return tokenRequest(idp, {
    grant_type: 'authorization_code',
    code: grant.code,
    client_id: grant.clientId,
    redirect_uri: TEST_REDIRECT_URI,
    code_verifier: grant.verifier,
    ...grant.extra,
  });
}

/** Signs a user in through a freshly registered public client; returns the code exchange. */
export async function signIn(
  idp: RunningIdp,
  credentials: { userName: string; password: string },
  scope: string,
  options: { clientId?: string; extra?: Record<string, string> } = {},
): Promise<UserTokens & { code: string; verifier: string }> {
  const clientId = options.clientId ?? (await registerClient(idp));
  const { verifier, params } = authorizeRequest(clientId, scope, options.extra);
  const login = await postLogin(idp, params, credentials);
  const location = login.headers.get('location');
  if (!location) throw new Error(`login failed: ${login.status}`);
  const code = new URL(location).searchParams.get('code')!;
  const exchange = await redeemCode(idp, {
    code,
    clientId,
    verifier,
    extra: options.extra?.resource ? { resource: options.extra.resource } : {},
  });
  if (exchange.status !== 200) throw new Error(`code exchange failed: ${exchange.status}`);
  return { ...(exchange.body as UserTokens), clientId, code, verifier };
}

/** Creates a user through SCIM and gives them a role with `permissions`; returns the user id. */
export async function createUserWithRole(
  idp: TestIdp,
  userName: string,
  password: string,
  permissions: readonly string[],
): Promise<{ userId: string; roleId: string }> {
  const created = await idp.scim('POST', '/Users', { body: userBody(userName, { password }) });
  if (created.status !== 201) throw new Error(`user creation failed: ${created.text}`);
  const userId = created.body.id as string;
  const role = await idp.scim('POST', '/v2/Roles', {
    body: {
      displayName: `role-of-${userName}`,
      permissions: permissions.map((value) => ({ value })),
      users: [{ value: userId }],
    },
  });
  if (role.status !== 201) throw new Error(`role creation failed: ${role.text}`);
  return { userId, roleId: role.body.id as string };
}

/** A login form as a browser at one address holds it: what it posts back, and its cookie. */
export type PendingLogin = {
  status: number;
  params: Record<string, string>;
  verifier: string;
  csrf?: string;
  cookie?: string;
};

/** GETs the login page for `clientId` from `client`'s address. */
export async function openLoginForm(
  idp: RunningIdp,
  client: LoopbackClient,
  clientId: string,
): Promise<PendingLogin> {
  const { verifier, params } = authorizeRequest(clientId, 'internal_login');
  const page = await client.send(`${idp.url}/oauth2/authorize?${new URLSearchParams(params)}`);
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(page.text)?.[1];
  const cookie = page.headers['set-cookie']?.[0]?.split(';')[0];
  return { status: page.status, params, verifier, ...(csrf && cookie ? { csrf, cookie } : {}) };
}

/** Posts a form from `openLoginForm`; returns the status and the code it redirected with. */
export async function submitLoginForm(
  idp: RunningIdp,
  client: LoopbackClient,
  form: PendingLogin,
  credentials: { userName: string; password: string },
): Promise<{ status: number; code?: string }> {
  const response = await client.send(`${idp.url}/oauth2/authorize`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(form.cookie ? { cookie: form.cookie } : {}),
    },
    body: new URLSearchParams({
      ...form.params,
      csrf_token: form.csrf ?? '',
      username: credentials.userName,
      password: credentials.password,
    }).toString(),
  });
  const location = response.headers.location;
  const code = location ? new URL(location).searchParams.get('code') : null;
  return { status: response.status, ...(code ? { code } : {}) };
}

/**
 * Signs a user in from `client`'s address as a browser and its MCP client would: the login
 * page, the form, the code exchange. Returns each step's status (0: not reached).
 */
export async function signInFrom(
  idp: RunningIdp,
  client: LoopbackClient,
  clientId: string,
  credentials: { userName: string; password: string },
): Promise<{ page: number; login: number; token: number }> {
  const form = await openLoginForm(idp, client, clientId);
  if (!form.csrf) return { page: form.status, login: 0, token: 0 };
  const login = await submitLoginForm(idp, client, form, credentials);
  if (!login.code) return { page: form.status, login: login.status, token: 0 };
  const token = await client.send(`${idp.url}/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: login.code,
      client_id: clientId,
      redirect_uri: TEST_REDIRECT_URI,
      code_verifier: form.verifier,
    }).toString(),
  });
  return { page: form.status, login: login.status, token: token.status };
}

/** Registers a public client from `client`'s address; returns the response. */
export function registerFrom(idp: RunningIdp, client: LoopbackClient, name = 'client') {
  return client.send(`${idp.url}/oauth2/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: [TEST_REDIRECT_URI], client_name: name }),
  });
}

/** The client id of a registration from `client`'s address that must succeed. */
export async function registeredFrom(
  idp: RunningIdp,
  client: LoopbackClient,
  name?: string,
): Promise<string> {
  const response = await registerFrom(idp, client, name);
  if (response.status !== 201) throw new Error(`registration failed: ${response.status}`);
  return (JSON.parse(response.text) as { client_id: string }).client_id;
}

/** Loopback clients at `addresses`, closed after the test file. */
export function clientsAt(addresses: readonly string[]): LoopbackClient[] {
  const clients = addresses.map(loopbackClient);
  afterAll(() => {
    for (const client of clients) client.close();
  });
  return clients;
}
