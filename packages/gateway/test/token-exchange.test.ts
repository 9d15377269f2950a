import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@mcp-identity/common';
import { lineLogger, useTempDir } from '@mcp-identity/common/testing';
import { type RunningIdp, startIdp } from '@mcp-identity/idp';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayFixture, proxyDefinition, startTestGateway } from './fixtures/gateway.js';
import { json, postMcp, toolCall } from './fixtures/mcp-client.js';
import { startUpstream, type Upstream } from './fixtures/upstream.js';

/*
 * `upstream.tokenExchange` (issue 41) against the real identity provider's RFC 8693 grant: the
 * upstream receives a token the IdP minted for it on the user's behalf, never the caller's own.
 */

const tempDir = useTempDir('gw-token-exchange-');
const ADMIN_APP = { clientId: 'admin-app', clientSecret: 'admin-secret-value' };
const GATEWAY_APP = { clientId: 'mcp-gateway', clientSecret: 'gateway-exchange-secret-5e1b' };
const SECRET_ENV = 'GW_TEST_EXCHANGE_SECRET';
const WRONG_SECRET_ENV = 'GW_TEST_EXCHANGE_WRONG_SECRET';
/** The delegating proxy's resource identifier: the callers' tokens are minted for it. */
const CALLER_RESOURCE = 'https://gw.example.test/deleg/mcp';
const LIST = 'internal_user_mgt_list';
const VIEW = 'internal_user_mgt_view';
const DELETE = 'internal_user_mgt_delete';
const REDIRECT_URI = 'http://127.0.0.1:8765/callback';
const EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
const USER = { userName: 'delegating-reader', password: 'Reader-pass1' };

const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

async function form(url: string, values: Record<string, string>, authorization?: string) {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(authorization ? { authorization } : {}),
    },
    body: new URLSearchParams(values),
  });
  return { status: response.status, body: (await response.json()) as Record<string, string> };
}

/** The IdP with the gateway's application allowed to exchange its proxy's tokens for `target`. */
function startDelegatingIdp(targets: readonly string[]): Promise<RunningIdp> {
  return startIdp({
    dataDir: tempDir(),
    http: true,
    port: 0,
    logger: createLogger({ level: 'silent' }),
    limits: { registrationsPerIpPerHour: 1000, registrationsPerNetworkPerHour: 1000 },
    bootstrap: {
      applications: [
        { name: 'admin', ...ADMIN_APP, scopes: '*', grantTypes: ['client_credentials'] },
        {
          name: 'mcp-gateway',
          ...GATEWAY_APP,
          scopes: '*',
          grantTypes: [EXCHANGE_GRANT],
          tokenExchange: { subjectAudiences: [CALLER_RESOURCE], resources: [...targets] },
        },
      ],
      apiResources: [
        {
          identifier: CALLER_RESOURCE,
          name: 'delegating proxy',
          scopes: [LIST, VIEW, DELETE],
          dynamicClients: true,
        },
        ...targets.map((identifier, i) => ({
          identifier,
          name: `upstream ${i}`,
          scopes: [LIST, VIEW, DELETE],
          applications: ['mcp-gateway'],
        })),
      ],
    },
  });
}

async function adminToken(idp: RunningIdp): Promise<string> {
  const answer = await form(
    idp.tokenEndpoint,
    {
      grant_type: 'client_credentials',
      scope: 'internal_user_mgt_create internal_role_mgt_create internal_metrics_view',
    },
    basic(ADMIN_APP.clientId, ADMIN_APP.clientSecret),
  );
  if (answer.status !== 200) throw new Error(`admin token: ${answer.status}`);
  return answer.body.access_token as string;
}

async function scim(idp: RunningIdp, token: string, path: string, body: unknown) {
  const response = await fetch(`${idp.url}/scim2${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' },
    body: JSON.stringify(body),
  });
  if (response.status !== 201) throw new Error(`SCIM ${path}: ${await response.text()}`);
  return (await response.json()) as { id: string };
}

/** A user whose role grants `permissions`. */
async function createUser(idp: RunningIdp, token: string, permissions: readonly string[]) {
  const user = await scim(idp, token, '/Users', {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName: USER.userName,
    password: USER.password,
    emails: [{ value: `${USER.userName}@example.com`, primary: true }],
  });
  await scim(idp, token, '/v2/Roles', {
    displayName: 'delegating readers',
    permissions: permissions.map((value) => ({ value })),
    users: [{ value: user.id }],
  });
  return user.id;
}

/** The user signs in through a public client (authorization code + PKCE) for `resource`. */
async function userToken(idp: RunningIdp, scope: string): Promise<string> {
  const registered = await fetch(`${idp.url}/oauth2/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: [REDIRECT_URI], client_name: 'delegation test' }),
  });
  const { client_id: clientId } = (await registered.json()) as { client_id: string };
  const verifier = randomBytes(32).toString('base64url');
  const params = {
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    state: 'st',
    scope,
    resource: CALLER_RESOURCE,
  };
  const page = await fetch(`${idp.url}/oauth2/authorize?${new URLSearchParams(params)}`);
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(await page.text())?.[1];
  if (!csrf) throw new Error(`no login form (${page.status})`);
  const login = await fetch(`${idp.url}/oauth2/authorize`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      cookie: page.headers.get('set-cookie')?.split(';')[0] ?? '',
    },
    body: new URLSearchParams({
      ...params,
      csrf_token: csrf,
      username: USER.userName,
      password: USER.password,
    }),
  });
  const code = new URL(login.headers.get('location') ?? 'x:').searchParams.get('code');
  if (!code) throw new Error(`login failed: ${login.status}`);
  const redeemed = await form(idp.tokenEndpoint, {
    grant_type: 'authorization_code',
    code,
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    code_verifier: verifier,
    resource: CALLER_RESOURCE,
  });
  if (redeemed.status !== 200) throw new Error(`code exchange: ${JSON.stringify(redeemed.body)}`);
  return redeemed.body.access_token as string;
}

/** A token endpoint that answers every request 503 with `Retry-After: 7` (an IdP in trouble). */
async function startFailingTokenEndpoint(): Promise<{ url: string; hits: number; server: Server }> {
  const state = { url: '', hits: 0, server: undefined as unknown as Server };
  state.server = createServer((request, response) => {
    state.hits += 1;
    request.resume();
    response.writeHead(503, { 'content-type': 'application/json', 'retry-after': '7' });
    response.end('{"error":"temporarily_unavailable"}');
  });
  await new Promise<void>((resolve) => state.server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(state.server.address() as AddressInfo).port}/oauth2/token`;
  return state;
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const AUTH_POLICIES = [
  { name: 'mcp-auth', version: 'v1', params: { issuers: ['idp'], audiences: [CALLER_RESOURCE] } },
  {
    name: 'mcp-authz',
    version: 'v1',
    params: { tools: [{ name: 'delete_user', scopes: { allOf: [DELETE] } }] },
  },
];

function delegating(
  name: string,
  context: string,
  upstreamUrl: string,
  exchange: Record<string, unknown>,
  policies: readonly unknown[] = AUTH_POLICIES,
) {
  const definition = proxyDefinition(name, context, upstreamUrl, policies);
  const spec = definition.spec as { upstream: Record<string, unknown> };
  spec.upstream.tokenExchange = {
    clientId: GATEWAY_APP.clientId,
    clientSecretRef: `env:${SECRET_ENV}`,
    ...exchange,
  };
  return definition;
}

describe('upstream.tokenExchange', () => {
  let upstream: Upstream;
  let idp: RunningIdp;
  let fx: GatewayFixture;
  let failing: Awaited<ReturnType<typeof startFailingTokenEndpoint>>;
  let metricsToken: string;
  let callerToken: string;
  const lines: Record<string, unknown>[] = [];
  const audits = () =>
    lines.filter((l) => l.msg === 'mcp request').map((l) => l.audit as Record<string, unknown>);

  /** RFC 8693 requests the IdP has answered so far, every outcome, from its own metrics. */
  const exchanges = async () => {
    const response = await fetch(`${idp.url}/metrics`, {
      headers: { authorization: `Bearer ${metricsToken}` },
    });
    return (await response.text())
      .split('\n')
      .filter((line) => line.startsWith(`idp_token_requests_total{grant_type="${EXCHANGE_GRANT}"`))
      .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
  };

  const call = (context: string, token: string, tool = 'search_users', id = 1) =>
    postMcp(
      `${fx.gateway.plainUrl}${context}/mcp`,
      toolCall(tool, tool === 'search_users' ? { filter: 'x', count: 1 } : {}, id),
      { authorization: `Bearer ${token}` },
    );

  beforeAll(async () => {
    process.env[SECRET_ENV] = GATEWAY_APP.clientSecret;
    process.env[WRONG_SECRET_ENV] = 'not-the-gateway-secret';
    upstream = await startUpstream();
    failing = await startFailingTokenEndpoint();
    idp = await startDelegatingIdp([upstream.jsonMcpUrl]);
    const admin = await adminToken(idp);
    metricsToken = admin;
    await createUser(idp, admin, [LIST, VIEW]);
    fx = await startTestGateway({
      dataDir: tempDir(),
      logger: lineLogger((line) => lines.push(line)),
      keyManagers: [{ name: 'idp', issuer: idp.issuer, jwks: { remote: { uri: idp.jwksUri } } }],
    });
    const deployed = await Promise.all([
      fx.deploy(
        delegating('deleg-v1.0', '/deleg', upstream.jsonMcpUrl, {
          tokenEndpoint: idp.tokenEndpoint,
        }),
      ),
      fx.deploy(
        delegating('elsewhere-v1.0', '/elsewhere', upstream.jsonMcpUrl, {
          tokenEndpoint: idp.tokenEndpoint,
          resource: 'https://not-allowed.example.test/mcp',
        }),
      ),
      fx.deploy(
        delegating('down-v1.0', '/down', upstream.jsonMcpUrl, {
          tokenEndpoint: `http://127.0.0.1:${await closedPort()}/oauth2/token`,
        }),
      ),
      fx.deploy(
        delegating('failing-v1.0', '/failing', upstream.jsonMcpUrl, {
          tokenEndpoint: failing.url,
        }),
      ),
      fx.deploy(
        delegating('misconfigured-v1.0', '/misconfigured', upstream.jsonMcpUrl, {
          tokenEndpoint: idp.tokenEndpoint,
          clientSecretRef: `env:${WRONG_SECRET_ENV}`,
        }),
      ),
      fx.deploy(proxyDefinition('plain-v1.0', '/plain', upstream.jsonMcpUrl, AUTH_POLICIES)),
    ]);
    for (const response of deployed) expect(response.status, await response.text()).toBe(201);
    callerToken = await userToken(idp, `${LIST} ${VIEW}`);
  });
  afterAll(async () => {
    delete process.env[SECRET_ENV];
    delete process.env[WRONG_SECRET_ENV];
    await fx?.gateway.close();
    await idp?.close();
    await upstream?.close();
    await new Promise((resolve) => failing?.server.close(resolve));
  });

  it("sends the upstream a token the IdP exchanged for it (user as sub, gateway as actor), never the caller's", async () => {
    const response = await call('/deleg', callerToken);
    expect(response.status).toBe(200);
    expect((await json(response)).result.content[0].text).toBe('found 1 for x');
    const sent = upstream.lastHeaders?.authorization ?? '';
    expect(sent).toMatch(/^Bearer /);
    const exchanged = sent.slice('Bearer '.length);
    expect(exchanged).not.toBe(callerToken);
    const caller = decodeJwt(callerToken);
    const claims = decodeJwt(exchanged);
    expect(claims.sub).toBe(caller.sub);
    expect(claims.act).toEqual({ sub: GATEWAY_APP.clientId });
    expect(claims.client_id).toBe(GATEWAY_APP.clientId);
    expect(claims.aud).toContain(upstream.jsonMcpUrl);
    expect(claims.aud).not.toContain(CALLER_RESOURCE);

    const audit = audits().at(-1);
    expect(audit).toMatchObject({
      proxy: 'deleg-v1.0',
      decision: 'allowed',
      subject: caller.sub,
      clientId: caller.client_id,
      exchangedJti: claims.jti,
    });
    const logged = JSON.stringify(lines);
    expect(logged).not.toContain(callerToken);
    expect(logged).not.toContain(exchanged);
    expect(logged).not.toContain(GATEWAY_APP.clientSecret);
    const stored = await json(await fx.management('/api/management/v1/mcp-proxies/deleg-v1.0'));
    expect(stored.spec.upstream.tokenExchange.clientSecretRef).toBe(`env:${SECRET_ENV}`);
    expect(JSON.stringify(stored)).not.toContain(GATEWAY_APP.clientSecret);
  });

  it('exchanges once per caller token: later calls use the cache, concurrent ones share one request', async () => {
    const before = await exchanges();
    const cached = await call('/deleg', callerToken);
    expect(cached.status).toBe(200);
    const cachedToken = upstream.lastHeaders?.authorization;
    expect(await exchanges()).toBe(before);

    const fresh = await userToken(idp, LIST);
    const answers = await Promise.all(
      [1, 2, 3, 4, 5].map((id) => call('/deleg', fresh, 'search_users', id)),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect(await exchanges()).toBe(before + 1);
    expect(upstream.lastHeaders?.authorization).not.toBe(cachedToken);
  });

  it('does not use a cached token past its expires_in less the margin', async () => {
    const token = await userToken(idp, LIST);
    expect((await call('/deleg', token)).status).toBe(200);
    const first = decodeJwt((upstream.lastHeaders?.authorization ?? '').slice(7));
    const before = await exchanges();
    const lifetime = ((first.exp as number) - (first.iat as number)) * 1000;
    // Still inside the margin's window: the caller's token is valid, the cached one is not used.
    fx.clock.advance(lifetime - 20_000);
    try {
      expect((await call('/deleg', token)).status).toBe(200);
      expect(await exchanges()).toBe(before + 1);
    } finally {
      fx.clock.advance(-(lifetime - 20_000));
    }
  });

  it("answers the IdP's refusal as a 403 JSON-RPC error, and nothing reaches the upstream", async () => {
    const hits = upstream.hits;
    const response = await call('/elsewhere', callerToken);
    expect(response.status).toBe(403);
    const body = await json(response);
    expect(body.error.code).toBe(-32000);
    expect(body.error.data.error).toBe('invalid_target');
    expect(body.id).toBe(1);
    expect(upstream.hits).toBe(hits);
    expect(audits().at(-1)).toMatchObject({
      proxy: 'elsewhere-v1.0',
      decision: 'forbidden',
      exchangeFailure: 'invalid_target',
    });
  });

  it('refuses a revoked caller token at the exchange (invalid_grant) though its signature still verifies', async () => {
    const token = await userToken(idp, LIST);
    const { client_id: clientId } = decodeJwt(token) as { client_id: string };
    const revoked = await fetch(`${idp.url}/oauth2/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token, client_id: clientId }),
    });
    expect(revoked.status).toBe(200);
    const hits = upstream.hits;
    const response = await call('/deleg', token);
    expect(response.status).toBe(403);
    expect((await json(response)).error.data.error).toBe('invalid_grant');
    expect(upstream.hits).toBe(hits);
  });

  it('answers 503 with Retry-After when the IdP is unreachable or failing, and nothing reaches the upstream', async () => {
    const hits = upstream.hits;
    const down = await call('/down', callerToken);
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toBe('5');
    expect((await json(down)).error.code).toBe(-32000);
    expect(audits().at(-1)).toMatchObject({
      decision: 'unavailable',
      exchangeFailure: 'unreachable',
    });

    const failed = await call('/failing', callerToken);
    expect(failed.status).toBe(503);
    expect(failed.headers.get('retry-after')).toBe('7');
    expect(failing.hits).toBe(1);
    expect(audits().at(-1)).toMatchObject({
      decision: 'unavailable',
      exchangeFailure: 'idp_error',
    });
    expect(upstream.hits).toBe(hits);
  });

  it("answers 502 when the IdP refuses the gateway's own credentials, and nothing reaches the upstream", async () => {
    const hits = upstream.hits;
    const response = await call('/misconfigured', callerToken);
    expect(response.status).toBe(502);
    const body = await json(response);
    expect(body.error.code).toBe(-32000);
    expect(body.error).not.toHaveProperty('data');
    expect(audits().at(-1)).toMatchObject({
      proxy: 'misconfigured-v1.0',
      decision: 'upstream_error',
      exchangeFailure: 'invalid_client',
    });
    expect(upstream.hits).toBe(hits);
    expect(JSON.stringify(lines)).not.toContain('not-the-gateway-secret');
  });

  it('leaves a proxy without tokenExchange as it was: no Authorization upstream, no exchange', async () => {
    const before = await exchanges();
    const response = await call('/plain', callerToken);
    expect(response.status).toBe(200);
    expect(upstream.lastHeaders?.authorization).toBeUndefined();
    expect(await exchanges()).toBe(before);
    const audit = audits().at(-1);
    expect(audit?.proxy).toBe('plain-v1.0');
    expect(audit).not.toHaveProperty('exchangedJti');
  });

  it('refuses unusable tokenExchange settings at deploy with the field paths', async () => {
    const cases: Array<[Record<string, unknown>, readonly unknown[], string, RegExp]> = [
      [
        { tokenEndpoint: undefined },
        AUTH_POLICIES,
        'spec.upstream.tokenExchange.tokenEndpoint',
        /required/,
      ],
      [
        { tokenEndpoint: 'http://idp.example.test/oauth2/token' },
        AUTH_POLICIES,
        'spec.upstream.tokenExchange.tokenEndpoint',
        /https/,
      ],
      [
        { clientSecretRef: 'env:GATEWAY_DATABASE_URL' },
        AUTH_POLICIES,
        'spec.upstream.tokenExchange.clientSecretRef',
        /not allowed/,
      ],
      [
        { clientSecretRef: 'env:GW_TEST_NOT_SET' },
        AUTH_POLICIES,
        'spec.upstream.tokenExchange.clientSecretRef',
        /not set/,
      ],
      [
        { resource: 'https://a.example.test/mcp#x' },
        AUTH_POLICIES,
        'spec.upstream.tokenExchange.resource',
        /fragment/,
      ],
      [{ scopes: [] }, AUTH_POLICIES, 'spec.upstream.tokenExchange.scopes', /non-empty/],
      [{ scopes: ['a b'] }, AUTH_POLICIES, 'spec.upstream.tokenExchange.scopes[0]', /scope token/],
      [{ audience: 'x' }, AUTH_POLICIES, 'spec.upstream.tokenExchange.audience', /not supported/],
      [{}, [], 'spec.upstream.tokenExchange', /needs the mcp-auth policy/],
      [
        {},
        [
          {
            name: 'mcp-auth',
            version: 'v1',
            params: { audiences: [CALLER_RESOURCE], forwardToken: true },
          },
        ],
        'spec.upstream.tokenExchange',
        /forwardToken/,
      ],
      [
        {},
        [
          {
            name: 'mcp-auth',
            version: 'v1',
            params: {
              audiences: [CALLER_RESOURCE],
              methods: { enabled: true, exceptions: ['initialize'] },
            },
          },
        ],
        'spec.upstream.tokenExchange',
        /must not exempt/,
      ],
    ];
    for (const [exchange, policies, field, message] of cases) {
      const definition = delegating(
        'bad-v1.0',
        '/bad',
        upstream.jsonMcpUrl,
        { tokenEndpoint: idp.tokenEndpoint, ...exchange },
        policies,
      );
      const response = await fx.deploy(definition);
      const body = await json(response);
      expect(response.status, JSON.stringify(exchange)).toBe(400);
      const errors = JSON.stringify(body);
      expect(errors, field).toContain(`"${field}"`);
      expect(errors).toMatch(message);
      expect(errors).not.toContain(GATEWAY_APP.clientSecret);
    }
  });
});
