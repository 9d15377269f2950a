import { lineLogger, seededRandom } from '@mcp-identity/common/testing';
import { describe, expect, it } from 'vitest';
import {
  ADMIN_CLIENT,
  createUserWithRole,
  MALFORMED_CONTENT_TYPES,
  registerClient,
  signIn,
  startTestIdp,
  TEST_REDIRECT_URI,
} from './helpers.js';

const SEED = 20_260_124;
const REQUESTS = 600;

const KEYS = [
  'grant_type',
  'code',
  'client_id',
  'client_secret',
  'redirect_uri',
  'redirect_uris',
  'scope',
  'resource',
  'refresh_token',
  'token',
  'token_type_hint',
  'code_verifier',
  'csrf_token',
  'username',
  'password',
  'response_type',
  'code_challenge',
  'code_challenge_method',
  'state',
  'client_name',
  'token_endpoint_auth_method',
];

describe('OAuth surface fuzz', async () => {
  const lines: Record<string, unknown>[] = [];
  const idp = await startTestIdp({ logger: lineLogger((line) => lines.push(line)) });
  const clientId = await registerClient(idp);
  const next = seededRandom(SEED);
  const pick = <T>(values: readonly T[]): T => values[Math.floor(next() * values.length)]!;
  const text = (): string =>
    pick([
      () => '',
      () => 'a'.repeat(Math.floor(next() * 40)),
      () => 'x'.repeat(70_000),
      () => '%zz%00%ff\u0000\ud800',
      () => '../../etc/passwd',
      () => '<script>alert(1)</script>',
      () => 'https://user:pw@evil.example/cb#f',
      () => TEST_REDIRECT_URI,
      () => clientId,
      () => ADMIN_CLIENT.clientId,
      () => pick(['authorization_code', 'refresh_token', 'client_credentials', 'password']),
      () => pick(['code', 'token', 'S256', 'plain', 'none']),
      () => 'internal_user_mgt_list internal_login',
      () => 'https://localhost:8443/scim/mcp',
      () => String(next() * 1e308),
      () => '\u202e\u{1f600}'.repeat(10),
    ])();
  const jsonValue = (depth = 0): unknown =>
    pick([
      () => text(),
      () => next() * 1e9,
      () => null,
      () => next() < 0.5,
      () => (depth < 3 ? Array.from({ length: 3 }, () => jsonValue(depth + 1)) : []),
      () =>
        depth < 3 ? Object.fromEntries(KEYS.slice(0, 4).map((k) => [k, jsonValue(depth + 1)])) : {},
    ])();
  const form = () => {
    const params = new URLSearchParams();
    const count = Math.floor(next() * 8);
    for (let i = 0; i < count; i++) params.append(pick(KEYS), text());
    return params;
  };
  const body = (): { type?: string; payload?: string } =>
    pick([
      () => ({ type: 'application/x-www-form-urlencoded', payload: form().toString() }),
      () => ({
        type: 'application/json',
        payload: JSON.stringify(
          Object.fromEntries(KEYS.filter(() => next() < 0.3).map((k) => [k, jsonValue()])),
        ),
      }),
      () => ({ type: 'application/json', payload: '{"redirect_uris": [' }),
      () => ({
        type: pick(['text/plain', 'application/xml', '', 'multipart/form-data']),
        payload: text(),
      }),
      () => ({ type: pick(MALFORMED_CONTENT_TYPES), payload: wellFormed() }),
      () => ({}),
    ])();
  /** A body the endpoints would act on with the right media type. */
  const wellFormed = () =>
    pick([
      () => form().toString(),
      () => `grant_type=client_credentials&client_id=${ADMIN_CLIENT.clientId}`,
      () => `token=${idp.adminToken}`,
      () => JSON.stringify({ redirect_uris: [TEST_REDIRECT_URI], client_name: text() }),
    ])();
  const authorization = (): Record<string, string> =>
    pick([
      () => ({}),
      () => ({ authorization: `Basic ${Buffer.from(`${text()}:${text()}`).toString('base64')}` }),
      () => ({ authorization: 'Basic %%%' }),
      () => ({ authorization: `Basic ${Buffer.from('no-colon').toString('base64')}` }),
      () => ({ authorization: `Bearer ${text()}` }),
    ])();
  const ENDPOINTS: [string, string][] = [
    ['GET', '/oauth2/authorize'],
    ['POST', '/oauth2/authorize'],
    ['POST', '/oauth2/token'],
    ['POST', '/oauth2/register'],
    ['POST', '/oauth2/revoke'],
    ['POST', '/oauth2/introspect'],
    ['GET', '/oauth2/jwks'],
    ['GET', '/.well-known/oauth-authorization-server/oauth2/token'],
    ['GET', '/.well-known/oauth-authorization-server'],
    ['OPTIONS', '/oauth2/token'],
  ];

  it(`answers ${REQUESTS} random requests (seed ${SEED}) without a server error`, async () => {
    const failures: string[] = [];
    for (let i = 0; i < REQUESTS; i++) {
      const [method, path] = pick(ENDPOINTS);
      const query = next() < 0.5 ? `?${form().toString()}` : '';
      const { type, payload } = method === 'GET' || method === 'OPTIONS' ? {} : body();
      const headers: Record<string, string> = { ...authorization() };
      if (type) headers['content-type'] = type;
      if (method === 'OPTIONS') {
        headers.origin = pick(['http://localhost:6274', 'null', text()]);
        headers['access-control-request-method'] = 'POST';
      }
      if (next() < 0.2) headers.cookie = `idp_csrf=${Buffer.from(text()).toString('base64url')}`;
      let status: number;
      try {
        const response = await fetch(`${idp.url}${path}${query}`, {
          method,
          headers,
          ...(payload === undefined ? {} : { body: payload }),
          redirect: 'manual',
        });
        await response.arrayBuffer();
        status = response.status;
      } catch (error) {
        // Headers fetch refuses to send (invalid characters) are the client's, not the server's.
        if (error instanceof TypeError && /header|ByteString/i.test(String(error.cause ?? error))) {
          continue;
        }
        throw error;
      }
      if (status >= 500) failures.push(`#${i} ${method} ${path}${query.slice(0, 80)} → ${status}`);
    }
    expect(failures).toEqual([]);
  }, 120_000);

  it(`refuses ${REQUESTS / 4} bodies under malformed Content-Types with a 4xx, changing nothing`, async () => {
    await createUserWithRole(idp, 'fuzzed', 'Fuzzed-pass1', ['internal_login']);
    const clients = idp.admin.apps.countDynamic();
    const errorsBefore = lines.filter((line) => Number(line.level) >= 50).length;
    const adminBasic = {
      authorization: `Basic ${Buffer.from(`${ADMIN_CLIENT.clientId}:${ADMIN_CLIENT.clientSecret}`).toString('base64')}`,
    };
    const failures: string[] = [];
    for (let i = 0; i < REQUESTS / 4; i++) {
      const [, path] = pick(ENDPOINTS.filter(([method]) => method === 'POST'));
      const type = pick(MALFORMED_CONTENT_TYPES);
      const response = await fetch(`${idp.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': type, ...pick([{}, adminBasic]) },
        body: wellFormed(),
        redirect: 'manual',
      });
      const body = await response.text();
      if (response.status < 400 || response.status >= 500 || !body.includes('"error"')) {
        failures.push(`#${i} ${path} ${JSON.stringify(type)} → ${response.status}`);
      }
    }
    expect(failures).toEqual([]);
    expect(idp.admin.apps.countDynamic()).toBe(clients);
    expect(lines.filter((line) => Number(line.level) >= 50)).toHaveLength(errorsBefore);
    // The admin token was sent for revocation under every malformed type: it still works, and
    // a person still signs in.
    expect((await idp.scim('GET', '/Users?count=1')).status).toBe(200);
    await expect(
      signIn(idp, { userName: 'fuzzed', password: 'Fuzzed-pass1' }, 'internal_login'),
    ).resolves.toMatchObject({ scope: expect.any(String) });
  }, 60_000);
});
