import { randomBytes } from 'node:crypto';
import { s256Challenge, UnexpectedResponseError } from '@mcp-identity/common';

/**
 * A client for programs that sign in to this authorization server without a
 * browser (command-line tools, demos, conformance drivers): it fills the login
 * form over HTTP exactly as a browser would submit it.
 */

export interface LoginCredentials {
  email: string;
  password: string;
}

export interface TokenSet {
  accessToken: string;
  refreshToken: string | undefined;
  expiresIn: number | undefined;
  clientId: string;
}

// Loopback redirect URIs match on any port (RFC 8252 §7.3); nothing listens
// there because the code is read from the redirect's Location header.
const DEFAULT_REDIRECT_URI = 'http://127.0.0.1/callback';

const ENTITIES: Record<string, string> = {
  '&lt;': '<',
  '&gt;': '>',
  '&quot;': '"',
  '&#39;': "'",
  '&amp;': '&',
};

/** The hidden inputs of the login form (the authorize parameters and the CSRF token). */
export function loginFormFields(html: string): Record<string, string> {
  const decode = (value: string) =>
    value.replace(/&(lt|gt|quot|#39|amp);/g, (e) => ENTITIES[e] ?? e);
  const fields: Record<string, string> = {};
  for (const [, name = '', value = ''] of html.matchAll(
    /<input type="hidden" name="([^"]*)" value="([^"]*)">/g,
  )) {
    fields[decode(name)] = decode(value);
  }
  return fields;
}

/** Opens an authorization URL's login form, signs in, and returns where it redirects. */
export async function submitLoginForm(
  authorizationUrl: string,
  credentials: LoginCredentials,
): Promise<URL> {
  const form = await fetch(authorizationUrl);
  if (form.status !== 200) {
    throw new UnexpectedResponseError(
      `the authorization endpoint answered ${form.status}: ${await form.text()}`,
    );
  }
  // The form posts back to the authorization endpoint itself.
  const endpoint = new URL(authorizationUrl);
  endpoint.search = '';
  const response = await fetch(endpoint, {
    method: 'POST',
    body: new URLSearchParams({ ...loginFormFields(await form.text()), ...credentials }),
    redirect: 'manual',
  });
  const location = response.headers.get('location');
  if (response.status !== 302 && response.status !== 303) {
    throw new UnexpectedResponseError(`the login was not accepted (HTTP ${response.status})`);
  }
  if (location === null)
    throw new UnexpectedResponseError(`the login answered ${response.status} without a Location`);
  return new URL(location);
}

async function postJson(
  url: string,
  init: RequestInit,
  what: string,
): Promise<Record<string, unknown>> {
  const response = await fetch(url, init);
  const text = await response.text();
  if (!response.ok)
    throw new UnexpectedResponseError(`${what} answered ${response.status}: ${text}`);
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new UnexpectedResponseError(
      `${what} answered ${response.status} with a body that is not JSON`,
    );
  }
}

/**
 * The whole authorization code flow against an issuer (`baseUrl`): dynamic
 * registration, the login form, the code with PKCE S256, and the token.
 */
export async function obtainTokenWithLoginForm(
  baseUrl: string,
  credentials: LoginCredentials,
  options: { redirectUri?: string; scope?: string } = {},
): Promise<TokenSet> {
  const redirectUri = options.redirectUri ?? DEFAULT_REDIRECT_URI;
  const registration = await postJson(
    `${baseUrl}/oauth/register`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [redirectUri] }),
    },
    'registration',
  );
  const clientId = String(registration.client_id);
  const verifier = randomBytes(32).toString('base64url');
  const state = randomBytes(16).toString('base64url');
  const query = new URLSearchParams({
    client_id: clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    code_challenge: s256Challenge(verifier),
    code_challenge_method: 'S256',
    state,
    scope: options.scope ?? 'mcp:tools',
  });
  const redirect = await submitLoginForm(`${baseUrl}/oauth/authorize?${query}`, credentials);
  if (redirect.searchParams.get('state') !== state)
    throw new UnexpectedResponseError('the state came back changed');
  const code = redirect.searchParams.get('code');
  if (code === null)
    throw new UnexpectedResponseError(`the redirect carries no code: ${redirect.searchParams}`);
  const token = await postJson(
    `${baseUrl}/oauth/token`,
    {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        client_id: clientId,
        redirect_uri: redirectUri,
        code_verifier: verifier,
      }),
    },
    'the token endpoint',
  );
  return {
    accessToken: String(token.access_token),
    refreshToken: typeof token.refresh_token === 'string' ? token.refresh_token : undefined,
    expiresIn: typeof token.expires_in === 'number' ? token.expires_in : undefined,
    clientId,
  };
}
