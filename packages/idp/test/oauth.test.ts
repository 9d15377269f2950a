import { createHash, randomBytes } from 'node:crypto';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { ADMIN_CLIENT, startTestIdp, userBody } from './helpers.js';

const form = (values: Record<string, string>) => new URLSearchParams(values);
const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

describe('OAuth 2.0 endpoints', async () => {
  const idp = await startTestIdp();
  const jwks = createRemoteJWKSet(new URL(`${idp.url}/oauth2/jwks`));
  const tokenRequest = (body: URLSearchParams, headers: Record<string, string> = {}) =>
    fetch(`${idp.url}/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body,
    });

  const { clientSecret: limitedSecret } = await idp.admin.apps.create({
    name: 'limited',
    clientId: 'limited-app',
    scopes: ['internal_user_mgt_list', 'internal_user_mgt_view'],
  });

  it('issues a client_credentials JWT (HTTP Basic) with the intersection of scopes', async () => {
    const response = await tokenRequest(
      form({
        grant_type: 'client_credentials',
        scope: 'internal_user_mgt_list internal_user_mgt_delete',
      }),
      { authorization: basic('limited-app', limitedSecret!) },
    );
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      token_type: 'Bearer',
      expires_in: 3600,
      scope: 'internal_user_mgt_list',
    });
    const token = body.access_token as string;
    const { payload, protectedHeader } = await jwtVerify(token, jwks, {
      issuer: idp.issuer,
      audience: 'limited-app',
    });
    expect(protectedHeader.alg).toBe('RS256');
    expect(protectedHeader.kid).toEqual(expect.any(String));
    expect(payload).toMatchObject({
      sub: 'limited-app',
      client_id: 'limited-app',
      scope: 'internal_user_mgt_list',
    });
    expect(payload.exp! - payload.iat!).toBe(3600);
    expect(payload.nbf).toBe(payload.iat);
    expect(payload.jti).toEqual(expect.any(String));
  });

  it('accepts client_secret_post', async () => {
    const response = await tokenRequest(
      form({
        grant_type: 'client_credentials',
        client_id: 'limited-app',
        client_secret: limitedSecret!,
        scope: 'internal_user_mgt_view',
      }),
    );
    expect(response.status).toBe(200);
    expect(((await response.json()) as { scope: string }).scope).toBe('internal_user_mgt_view');
  });

  it('refuses a secret once it has been rotated', async () => {
    const { clientSecret } = await idp.admin.apps.create({
      name: 'rotating',
      clientId: 'rotating',
    });
    const request = (secret: string) =>
      tokenRequest(form({ grant_type: 'client_credentials' }), {
        authorization: basic('rotating', secret),
      });
    expect((await request(clientSecret!)).status).toBe(200);
    const next = await idp.admin.apps.rotateSecret('rotating');
    expect((await request(clientSecret!)).status).toBe(401);
    expect((await request(next)).status).toBe(200);
  });

  it('answers RFC 6749 errors', async () => {
    const wrongSecret = await tokenRequest(form({ grant_type: 'client_credentials' }), {
      authorization: basic('limited-app', 'nope'),
    });
    expect(wrongSecret.status).toBe(401);
    expect(wrongSecret.headers.get('www-authenticate')).toMatch(/^Basic/);
    expect(await wrongSecret.json()).toMatchObject({ error: 'invalid_client' });

    const badGrant = await tokenRequest(form({ grant_type: 'password' }), {
      authorization: basic('limited-app', limitedSecret!),
    });
    expect(badGrant.status).toBe(400);
    expect(await badGrant.json()).toMatchObject({ error: 'unsupported_grant_type' });

    const noGrant = await tokenRequest(form({}), {
      authorization: basic('limited-app', limitedSecret!),
    });
    expect(await noGrant.json()).toMatchObject({ error: 'invalid_request' });

    const json = await fetch(`${idp.url}/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(json.status).toBe(400);
    expect(await json.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('serves RFC 8414 metadata at the path-inserted location', async () => {
    const response = await fetch(`${idp.url}/.well-known/oauth-authorization-server/oauth2/token`);
    expect(response.status).toBe(200);
    const metadata = (await response.json()) as Record<string, unknown>;
    expect(metadata).toMatchObject({
      issuer: idp.issuer,
      authorization_endpoint: `${idp.url}/oauth2/authorize`,
      token_endpoint: `${idp.url}/oauth2/token`,
      jwks_uri: `${idp.url}/oauth2/jwks`,
      registration_endpoint: `${idp.url}/oauth2/register`,
      code_challenge_methods_supported: ['S256'],
    });
    expect(metadata.grant_types_supported).toEqual(
      expect.arrayContaining(['authorization_code', 'refresh_token', 'client_credentials']),
    );
    expect(metadata.scopes_supported).toContain('internal_user_mgt_list');
  });

  it('keeps tokens of a rotated key valid and signs new ones with the new key', async () => {
    const before = await idp.token(['internal_user_mgt_list']);
    const newKid = await idp.admin.keys.rotate();
    const after = await idp.token(['internal_user_mgt_list']);
    expect(decodeProtectedHeader(after).kid).toBe(newKid);
    expect(decodeProtectedHeader(before).kid).not.toBe(newKid);
    const keys = (await (await fetch(`${idp.url}/oauth2/jwks`)).json()) as {
      keys: { kid: string }[];
    };
    expect(keys.keys.map((k) => k.kid)).toEqual(
      expect.arrayContaining([newKid, decodeProtectedHeader(before).kid]),
    );
    for (const token of [before, after]) {
      const fresh = createRemoteJWKSet(new URL(`${idp.url}/oauth2/jwks`));
      await expect(jwtVerify(token, fresh, { issuer: idp.issuer })).resolves.toBeTruthy();
      expect((await idp.scim('GET', '/Users', { token })).status).toBe(200);
    }
  });

  describe('authorization code + PKCE for IdP users', async () => {
    const userName = 'carol';
    const password = 'Carol-pass1';
    await idp.scim('POST', '/Users', { body: userBody(userName, { password }) });
    const user = idp.admin.service.users.findByUserName(userName)!;
    const role = idp.admin.service.roles.create({
      displayName: 'user-readers',
      permissions: [{ value: 'internal_user_mgt_list' }],
      users: [{ value: user.id }],
    });
    expect(role.users).toHaveLength(1);

    const redirectUri = 'http://127.0.0.1:8765/callback';
    const register = async () => {
      const response = await fetch(`${idp.url}/oauth2/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ redirect_uris: [redirectUri], client_name: 'MCP <client>' }),
      });
      expect(response.status).toBe(201);
      return (await response.json()) as Record<string, unknown>;
    };
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const authorizeParams = (clientId: string, state: string) => ({
      client_id: clientId,
      redirect_uri: redirectUri,
      response_type: 'code',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state,
      scope: 'internal_user_mgt_list internal_user_mgt_delete internal_login',
    });

    /** GET the login page, then POST the form with its CSRF cookie; returns the redirect. */
    const login = async (clientId: string, state: string, pass = password) => {
      const params = authorizeParams(clientId, state);
      const page = await fetch(`${idp.url}/oauth2/authorize?${new URLSearchParams(params)}`);
      const html = await page.text();
      const csrf = /name="csrf_token" value="([^"]+)"/.exec(html)![1]!;
      const cookie = page.headers.get('set-cookie')!.split(';')[0]!;
      return fetch(`${idp.url}/oauth2/authorize`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
        body: form({ ...params, csrf_token: csrf, username: userName, password: pass }),
      });
    };

    it('registers a public client (RFC 7591)', async () => {
      const client = await register();
      expect(client).toMatchObject({
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        redirect_uris: [redirectUri],
      });
      const bad = await fetch(`${idp.url}/oauth2/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ redirect_uris: ['http://evil.example/cb'] }),
      });
      expect(bad.status).toBe(400);
      expect(await bad.json()).toMatchObject({ error: 'invalid_redirect_uri' });
    });

    it('renders an escaped login page with security headers', async () => {
      const client = await register();
      const params = authorizeParams(client.client_id as string, '"><script>alert(1)</script>');
      const page = await fetch(`${idp.url}/oauth2/authorize?${new URLSearchParams(params)}`);
      expect(page.status).toBe(200);
      expect(page.headers.get('x-frame-options')).toBe('DENY');
      expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      const html = await page.text();
      expect(html).not.toContain('<script>alert(1)</script>');
      expect(html).toContain('&quot;&gt;&lt;script&gt;');
      expect(html).toContain('MCP &lt;client&gt;');

      const unknown = await fetch(
        `${idp.url}/oauth2/authorize?${new URLSearchParams({ ...params, client_id: 'nobody' })}`,
      );
      expect(unknown.status).toBe(400);
      const plain = await fetch(
        `${idp.url}/oauth2/authorize?${new URLSearchParams({ ...params, code_challenge_method: 'plain' })}`,
        { redirect: 'manual' },
      );
      expect(plain.status).toBe(302);
      expect(new URL(plain.headers.get('location')!).searchParams.get('error')).toBe(
        'invalid_request',
      );
    });

    it('rejects a wrong password by showing the form again', async () => {
      const client = await register();
      const response = await login(client.client_id as string, 's1', 'wrong-password');
      expect(response.status).toBe(401);
      expect(await response.text()).toContain('Login failed');
    });

    it('exchanges a code with PKCE, rotates refresh tokens, revokes and introspects', async () => {
      const client = await register();
      const clientId = client.client_id as string;
      const redirect = await login(clientId, 'xyz');
      expect(redirect.status).toBe(302);
      const location = new URL(redirect.headers.get('location')!);
      expect(location.origin + location.pathname).toBe(redirectUri);
      expect(location.searchParams.get('state')).toBe('xyz');
      const code = location.searchParams.get('code')!;

      const wrongVerifier = await tokenRequest(
        form({
          grant_type: 'authorization_code',
          code,
          client_id: clientId,
          redirect_uri: redirectUri,
          code_verifier: 'x'.repeat(43),
        }),
      );
      expect(wrongVerifier.status).toBe(400);
      expect(await wrongVerifier.json()).toMatchObject({ error: 'invalid_grant' });

      const second = await login(clientId, 'again');
      const code2 = new URL(second.headers.get('location')!).searchParams.get('code')!;
      const exchange = await tokenRequest(
        form({
          grant_type: 'authorization_code',
          code: code2,
          client_id: clientId,
          redirect_uri: redirectUri,
          code_verifier: verifier,
        }),
      );
      expect(exchange.status).toBe(200);
      const tokens = (await exchange.json()) as Record<string, string>;
      // The user's roles grant only internal_user_mgt_list; internal_login is always allowed.
      expect(tokens.scope).toBe('internal_user_mgt_list internal_login');
      const currentKeys = createRemoteJWKSet(new URL(`${idp.url}/oauth2/jwks`));
      const { payload } = await jwtVerify(tokens.access_token!, currentKeys, {
        issuer: idp.issuer,
        audience: clientId,
      });
      expect(payload.sub).toBe(user.id);

      const me = await idp.scim('GET', '/Me', { token: tokens.access_token! });
      expect(me.status).toBe(200);
      expect(me.body.userName).toBe(userName);

      const refreshed = await tokenRequest(
        form({
          grant_type: 'refresh_token',
          refresh_token: tokens.refresh_token!,
          client_id: clientId,
        }),
      );
      expect(refreshed.status).toBe(200);
      const next = (await refreshed.json()) as Record<string, string>;
      expect(next.refresh_token).not.toBe(tokens.refresh_token);

      const introspect = (token: string) =>
        fetch(`${idp.url}/oauth2/introspect`, {
          method: 'POST',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            authorization: basic(ADMIN_CLIENT.clientId, ADMIN_CLIENT.clientSecret),
          },
          body: form({ token }),
        }).then((r) => r.json() as Promise<Record<string, unknown>>);
      expect(await introspect(next.access_token!)).toMatchObject({
        active: true,
        sub: user.id,
        client_id: clientId,
      });
      expect(await introspect(next.refresh_token!)).toMatchObject({
        active: true,
        token_type: 'refresh_token',
      });

      const revoke = (token: string) =>
        fetch(`${idp.url}/oauth2/revoke`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: form({ token, client_id: clientId }),
        });
      expect((await revoke(next.access_token!)).status).toBe(200);
      expect((await revoke(next.refresh_token!)).status).toBe(200);
      expect(await introspect(next.access_token!)).toEqual({ active: false });
      expect(await introspect(next.refresh_token!)).toEqual({ active: false });
      expect((await idp.scim('GET', '/Me', { token: next.access_token! })).status).toBe(401);
    });
  });
});
