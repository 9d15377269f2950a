import * as oauth from 'oauth4webapi';
import { describe, expect, it } from 'vitest';
import {
  authorizeRequest,
  createUserWithRole,
  postLogin,
  registerClient,
  startTestIdp,
  TEST_REDIRECT_URI,
} from './helpers.js';

// The test IdP speaks plain http on loopback, which the strict client refuses unless told.
const insecure = { [oauth.allowInsecureRequests]: true } as const;

/** GETs the authorize endpoint without following a redirect. */
function authorize(url: string, params: Record<string, string | undefined>): Promise<Response> {
  const defined = Object.entries(params).filter((entry): entry is [string, string] => {
    return entry[1] !== undefined;
  });
  return fetch(`${url}/oauth2/authorize?${new URLSearchParams(defined)}`, { redirect: 'manual' });
}

describe('authorization responses (RFC 9207, RFC 6749 §4.1.2.1)', async () => {
  const idp = await startTestIdp();
  const password = 'Pa55word!x';
  await createUserWithRole(idp, 'iss-user', password, ['internal_user_mgt_list']);
  const issuer = new URL(idp.issuer);
  const as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }),
  );

  it('advertises authorization_response_iss_parameter_supported', () => {
    expect(as.authorization_response_iss_parameter_supported).toBe(true);
  });

  it('lets a strict client validate iss on a code response and on an error response', async () => {
    const client: oauth.Client = { client_id: await registerClient(idp) };
    const { params } = authorizeRequest(client.client_id, 'internal_user_mgt_list');
    const login = await postLogin(idp, params, { userName: 'iss-user', password });
    const success = new URL(login.headers.get('location') ?? '');
    expect(oauth.validateAuthResponse(as, client, success, 'st').get('code')).toBeTruthy();

    const refused = await authorize(idp.url, { ...params, code_challenge_method: 'plain' });
    const error = new URL(refused.headers.get('location') ?? '');
    expect(() => oauth.validateAuthResponse(as, client, error, 'st')).toThrow(
      oauth.AuthorizationResponseError,
    );
    // The same error from another issuer is told apart (the mix-up RFC 9207 prevents).
    error.searchParams.set('iss', 'https://other.example');
    expect(() => oauth.validateAuthResponse(as, client, error, 'st')).toThrow(/"iss"/);
  });

  for (const [label, overrides, error] of [
    ['response_type is token', { response_type: 'token' }, 'unsupported_response_type'],
    ['code_challenge is missing', { code_challenge: undefined }, 'invalid_request'],
    ['code_challenge_method is plain', { code_challenge_method: 'plain' }, 'invalid_request'],
    ['code_challenge_method is missing', { code_challenge_method: undefined }, 'invalid_request'],
    ['resource is foreign', { resource: 'https://other.example/mcp' }, 'invalid_target'],
  ] as const) {
    it(`redirects to the client when ${label}, with error, state and iss`, async () => {
      const clientId = await registerClient(idp);
      const { params } = authorizeRequest(clientId, 'internal_user_mgt_list');
      const response = await authorize(idp.url, { ...params, ...overrides });
      expect(response.status).toBe(302);
      const location = new URL(response.headers.get('location') ?? '');
      expect(`${location.origin}${location.pathname}`).toBe(TEST_REDIRECT_URI);
      expect(location.searchParams.get('error')).toBe(error);
      expect(location.searchParams.get('error_description')).toBeTruthy();
      expect(location.searchParams.get('state')).toBe('st');
      expect(location.searchParams.get('iss')).toBe(idp.issuer);
    });
  }

  it('never redirects when the client or its redirect URI is not good', async () => {
    const clientId = await registerClient(idp);
    const { params } = authorizeRequest(clientId, 'internal_user_mgt_list');
    for (const overrides of [
      { client_id: 'nobody', response_type: 'token' },
      { redirect_uri: 'https://evil.example/cb', response_type: 'token' },
    ]) {
      const response = await authorize(idp.url, { ...params, ...overrides });
      expect(response.status).toBe(400);
      expect(response.headers.get('location')).toBeNull();
    }
    const twice = new URLSearchParams(params);
    twice.append('redirect_uri', 'https://evil.example/cb');
    const repeated = await fetch(`${idp.url}/oauth2/authorize?${twice}`, { redirect: 'manual' });
    expect(repeated.status).toBe(400);
  });
});

describe('private-use-scheme redirect URIs (RFC 8252 §7.1)', async () => {
  const idp = await startTestIdp();
  const register = (redirectUri: string) =>
    fetch(`${idp.url}/oauth2/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [redirectUri], client_name: 'Cursor' }),
    });

  it('registers a Cursor-style client and sends its authorization response there', async () => {
    const uri = 'cursor://anysphere.cursor-retrieval/oauth/callback';
    const response = await register(uri);
    expect(response.status).toBe(201);
    const client = (await response.json()) as { client_id: string; redirect_uris: string[] };
    expect(client.redirect_uris).toEqual([uri]);
    const { params } = authorizeRequest(client.client_id, 'internal_login', { redirect_uri: uri });
    const refused = await authorize(idp.url, { ...params, response_type: 'token' });
    expect(refused.headers.get('location')).toMatch(
      /^cursor:\/\/anysphere\.cursor-retrieval\/oauth\/callback\?error=unsupported_response_type/,
    );
  });

  for (const uri of [
    'javascript://anysphere.cursor-retrieval/%0Aalert(1)',
    'data://anysphere.cursor-retrieval/x',
    'file://anysphere.cursor-retrieval/etc/passwd',
    'myapp:/cb',
  ]) {
    it(`refuses ${uri.split(':')[0]}: ${uri}`, async () => {
      const response = await register(uri);
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ error: 'invalid_redirect_uri' });
    });
  }
});
