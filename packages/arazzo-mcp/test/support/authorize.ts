import { createHash, randomBytes } from 'node:crypto';
import { submitLoginForm } from '@mcp-identity/oauth';
import { expect } from 'vitest';

export const REDIRECT_URI = 'http://127.0.0.1:8976/callback';

/** RFC 7591 registration of a client redirecting to `REDIRECT_URI`. */
export function registerClient(base: string): Promise<Response> {
  return fetch(`${base}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: [REDIRECT_URI] }),
  });
}

/**
 * An authorization code of `credentials`' account, with the client registered at `registerAt`
 * and the login form submitted at `loginAt` (instances of one deployment, or the same).
 */
export async function authorizeAcross(
  registerAt: string,
  loginAt: string,
  credentials: { email: string; password: string },
): Promise<{ clientId: string; verifier: string; code: string }> {
  const registration = await registerClient(registerAt);
  expect(registration.status).toBe(200);
  const clientId = ((await registration.json()) as { client_id: string }).client_id;
  const verifier = randomBytes(32).toString('base64url');
  const query = new URLSearchParams({
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    state: 'xyz',
    scope: 'mcp:tools',
  });
  const redirect = await submitLoginForm(`${loginAt}/oauth/authorize?${query}`, credentials);
  return { clientId, verifier, code: redirect.searchParams.get('code') as string };
}

/** The authorization-code exchange at `base` of a code from `authorizeAcross`. */
export function exchangeCode(
  base: string,
  grant: { clientId: string; verifier: string; code: string },
): Promise<Response> {
  return fetch(`${base}/oauth/token`, {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: grant.code,
      client_id: grant.clientId,
      redirect_uri: REDIRECT_URI,
      code_verifier: grant.verifier,
    }),
  });
}

/** A refresh-token grant at `base`. */
export function refreshAt(base: string, clientId: string, refreshToken: string): Promise<Response> {
  return fetch(`${base}/oauth/token`, {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      client_id: clientId,
    }),
  });
}
