import { randomBytes } from 'node:crypto';
import { s256Challenge, UnexpectedResponseError } from '@mcp-identity/common';
import { loginFormFields } from '@mcp-identity/oauth';
import { trustingAgent } from './clients.js';
import type { StackLayout } from './layout.js';
import { fetchNamingUrl } from './network.js';

/** Loopback, where nothing listens: the code is read from the Location (RFC 8252 §7.3). */
export const LOGIN_REDIRECT_URI = 'http://127.0.0.1/callback';

/**
 * A person's access token from the stack's IdP without a browser (`up --delegation`'s demo, its
 * e2e test and bench): the authorization code flow with PKCE S256 (RFC 7636) for the stack's
 * client application, its login form filled over HTTP as a browser submits it (the CSRF cookie
 * sent back).
 */
export async function userAccessToken(
  layout: StackLayout,
  client: { clientId: string; clientSecret: string },
  user: { userName: string; password: string },
  scopes: readonly string[],
  /** The RFC 8707 resource the token is for (the gateway's MCP URL, say). */
  resource?: string,
): Promise<string> {
  const dispatcher = trustingAgent(layout.caFile);
  try {
    const verifier = randomBytes(32).toString('base64url');
    const state = randomBytes(16).toString('base64url');
    const authorize = new URL(`${layout.idp.url}/oauth2/authorize`);
    authorize.search = new URLSearchParams({
      client_id: client.clientId,
      redirect_uri: LOGIN_REDIRECT_URI,
      response_type: 'code',
      code_challenge: s256Challenge(verifier),
      code_challenge_method: 'S256',
      state,
      scope: scopes.join(' '),
      ...(resource !== undefined && { resource }),
    }).toString();
    const form = await fetchNamingUrl(authorize.href, { dispatcher });
    const page = await form.text();
    if (form.status !== 200) {
      throw new UnexpectedResponseError(`the IdP's authorize endpoint answered ${form.status}`);
    }
    const cookie = form.headers
      .getSetCookie()
      .map((line) => line.split(';')[0])
      .join('; ');
    const login = await fetchNamingUrl(`${layout.idp.url}/oauth2/authorize`, {
      method: 'POST',
      dispatcher,
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
      body: new URLSearchParams({
        ...loginFormFields(page),
        username: user.userName,
        password: user.password,
      }),
    });
    await login.body?.cancel();
    const location = login.headers.get('location');
    const redirect = location === null ? undefined : new URL(location);
    const code = redirect?.searchParams.get('code');
    if (!code || redirect?.searchParams.get('state') !== state) {
      throw new UnexpectedResponseError(
        `the IdP did not sign ${user.userName} in (HTTP ${login.status}${redirect ? `, ${redirect.searchParams.get('error') ?? 'no code'}` : ''})`,
      );
    }
    const basic = Buffer.from(
      `${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`,
    ).toString('base64');
    const token = await fetchNamingUrl(layout.idp.tokenUrl, {
      method: 'POST',
      dispatcher,
      headers: {
        authorization: `Basic ${basic}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: LOGIN_REDIRECT_URI,
        code_verifier: verifier,
        ...(resource !== undefined && { resource }),
      }),
    });
    const body = (await token.json().catch(() => ({}))) as Record<string, unknown>;
    if (!token.ok || typeof body.access_token !== 'string') {
      throw new UnexpectedResponseError(
        `the IdP refused ${user.userName}'s code (HTTP ${token.status}): ${String(body.error ?? 'no token')}`,
      );
    }
    return body.access_token;
  } finally {
    await dispatcher.close();
  }
}
