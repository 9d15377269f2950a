import * as oauth from 'oauth4webapi';
import { describe, expect, it } from 'vitest';
import {
  getAuthorize,
  hiddenFields,
  postLogin,
  REDIRECT_URI,
  registerClient,
} from './fixtures/flow.js';
import { ALICE, hostForSuite } from './fixtures/host.js';

// Loopback test servers speak plain http, which the strict client refuses unless told.
const insecure = { [oauth.allowInsecureRequests]: true } as const;

/** The authorization server's metadata as oauth4webapi discovers and validates it. */
async function discover(url: string): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(url);
  return oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }),
  );
}

/** A code-flow authorization request with S256 PKCE and `state`, as oauth4webapi's users build it. */
async function authorizationUrl(
  as: oauth.AuthorizationServer,
  client: oauth.Client,
  request: { verifier: string; state: string; extra: Record<string, string> },
): Promise<URL> {
  const url = new URL(as.authorization_endpoint ?? '');
  url.search = new URLSearchParams({
    client_id: client.client_id,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    code_challenge: await oauth.calculatePKCECodeChallenge(request.verifier),
    code_challenge_method: 'S256',
    state: request.state,
    ...request.extra,
  }).toString();
  return url;
}

describe('a strict OAuth client (oauth4webapi)', () => {
  const host = hostForSuite();

  it('performs discovery, the code flow with PKCE and iss, a refresh, and validates the JWT', async () => {
    const as = await discover(host.url);
    expect(as.code_challenge_methods_supported).toEqual(['S256']);

    // Registration goes through fetch: Area A answers 200, oauth4webapi insists on RFC 7591's 201.
    const client: oauth.Client = { client_id: await registerClient(host.url) };
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const authorizeUrl = await authorizationUrl(as, client, {
      verifier,
      state,
      extra: { scope: 'mcp:tools' },
    });

    const form = await getAuthorize(host.url, Object.fromEntries(authorizeUrl.searchParams));
    expect(form.response.status).toBe(200);
    const login = await postLogin(host.url, hiddenFields(form.html), ALICE);
    const callback = new URL(login.headers.get('location') ?? '');
    const params = oauth.validateAuthResponse(as, client, callback, state);

    const tokenResponse = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.None(),
      params,
      REDIRECT_URI,
      verifier,
      insecure,
    );
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, tokenResponse);
    expect(tokens.token_type).toBe('bearer');
    expect(tokens.scope).toBe('mcp:tools');
    expect(tokens.refresh_token).toBeDefined();

    const claims = await oauth.validateJwtAccessToken(
      as,
      new Request(`${host.url}/mcp`, {
        headers: { authorization: `Bearer ${tokens.access_token}` },
      }),
      `${host.url}/mcp`,
      insecure,
    );
    expect(claims).toMatchObject({
      sub: ALICE.id,
      client_id: client.client_id,
      scope: 'mcp:tools',
    });

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(
        as,
        client,
        oauth.None(),
        tokens.refresh_token ?? '',
        insecure,
      ),
    );
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
  });

  it('validates iss on an error response (RFC 9207) and tells another issuer apart', async () => {
    const as = await discover(host.url);
    expect(as.authorization_response_iss_parameter_supported).toBe(true);
    const client: oauth.Client = { client_id: await registerClient(host.url) };
    const state = oauth.generateRandomState();
    const authorizeUrl = await authorizationUrl(as, client, {
      verifier: oauth.generateRandomCodeVerifier(),
      state,
      extra: { resource: 'https://other.example/mcp' },
    });
    const refused = await fetch(authorizeUrl, { redirect: 'manual' });
    const callback = new URL(refused.headers.get('location') ?? '');
    expect(() => oauth.validateAuthResponse(as, client, callback, state)).toThrow(
      oauth.AuthorizationResponseError,
    );
    callback.searchParams.set('iss', 'https://other.example');
    expect(() => oauth.validateAuthResponse(as, client, callback, state)).toThrow(/"iss"/);
  });
});
