import { createHash } from 'node:crypto';
import { refreshRaceChain } from '@mcp-identity/common/testing';
import type { RefreshTokenEntry } from '@mcp-identity/oauth';
import { DEFAULT_REFRESH_RACE_WINDOW_SECONDS, MemoryOAuthStore } from '@mcp-identity/oauth';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import type { TokenResponse } from './fixtures/flow.js';
import {
  authorizeCode,
  exchangeCode,
  listTools,
  obtainTokens,
  postForm,
  refresh,
} from './fixtures/flow.js';
import { ALICE, hostForSuite, withHost } from './fixtures/host.js';

const INVALID_CODE = 'The authorization code is invalid or expired.';
const MISMATCH = 'The authorization code does not match the request.';
const PKCE_FAILED = 'PKCE verification failed.';
const INVALID_REFRESH = 'The refresh token is invalid, expired or revoked.';
const SUBJECT_GONE = 'The account behind this grant no longer has access.';
const RACE_WINDOW_MS = DEFAULT_REFRESH_RACE_WINDOW_SECONDS * 1000;

async function expectOAuthError(response: Response, status: number, error: string, text?: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get('cache-control')).toBe('no-store');
  const body = (await response.json()) as { error: string; error_description: string };
  expect(body.error).toBe(error);
  if (text !== undefined) expect(body.error_description).toBe(text);
}

class RecordingStore extends MemoryOAuthStore {
  readonly refreshKeys: string[] = [];
  override async saveRefreshToken(tokenHash: string, entry: RefreshTokenEntry): Promise<void> {
    this.refreshKeys.push(tokenHash);
    return super.saveRefreshToken(tokenHash, entry);
  }
}

describe('POST /oauth/token, authorization_code grant', () => {
  const store = new RecordingStore();
  const host = hostForSuite({ store });
  // A test that changes what the subject check answers leaves it as it found it.
  afterEach(() => host.subjects.clear());

  it('exchanges a code for an access token and a refresh token with the standard fields', async () => {
    const { code, clientId, verifier } = await authorizeCode(host);
    const response = await exchangeCode(host.url, { code, clientId, verifier });
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = (await response.json()) as TokenResponse;
    expect(Object.keys(body).sort()).toEqual(
      ['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type'].sort(),
    );
    expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 300, scope: 'mcp:tools' });
    expect(body.refresh_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(decodeProtectedHeader(body.access_token)).toMatchObject({ alg: 'ES256', typ: 'at+jwt' });
    const claims = decodeJwt(body.access_token);
    expect(claims).toMatchObject({
      scope: 'mcp:tools',
      iss: host.url,
      aud: `${host.url}/mcp`,
      sub: ALICE.id,
      client_id: clientId,
    });
    expect((claims.exp ?? 0) - (claims.iat ?? 0)).toBe(300);
    expect(claims.jti).toEqual(expect.any(String));
  });

  it('keeps refresh tokens hashed in the store', async () => {
    const tokens = await obtainTokens(host);
    const hash = createHash('sha256').update(tokens.refresh_token).digest('base64url');
    expect(store.refreshKeys).toContain(hash);
    expect(store.refreshKeys).not.toContain(tokens.refresh_token);
  });

  it('accepts a code once: the second exchange is invalid_grant', async () => {
    const { code, clientId, verifier } = await authorizeCode(host);
    expect((await exchangeCode(host.url, { code, clientId, verifier })).status).toBe(200);
    await expectOAuthError(
      await exchangeCode(host.url, { code, clientId, verifier }),
      400,
      'invalid_grant',
      INVALID_CODE,
    );
  });

  it('revokes the refresh tokens issued from a code when the code is replayed', async () => {
    const grant = await authorizeCode(host);
    const tokens = (await (await exchangeCode(host.url, grant)).json()) as TokenResponse;
    await expectOAuthError(await exchangeCode(host.url, grant), 400, 'invalid_grant', INVALID_CODE);
    await expectOAuthError(
      await refresh(host.url, tokens.refresh_token, grant.clientId),
      400,
      'invalid_grant',
    );
  });

  it('rejects an unknown code with invalid_grant', async () => {
    const { clientId, verifier } = await authorizeCode(host);
    await expectOAuthError(
      await exchangeCode(host.url, { code: 'A'.repeat(43), clientId, verifier }),
      400,
      'invalid_grant',
      INVALID_CODE,
    );
  });

  it('accepts a code just before 2 minutes and rejects it at 2 minutes', async () => {
    const early = await authorizeCode(host);
    const late = await authorizeCode(host);
    host.clock.advance(2 * 60_000 - 1000);
    expect((await exchangeCode(host.url, early)).status).toBe(200);
    host.clock.advance(1000);
    await expectOAuthError(await exchangeCode(host.url, late), 400, 'invalid_grant', INVALID_CODE);
  });

  // The code is checked first: whatever fails after it, client, redirect URI or PKCE, consumes it.
  it.each([
    ['another client_id as not matching', { clientId: 'someone-else' }, MISMATCH],
    [
      'another redirect_uri as not matching',
      { redirectUri: 'http://127.0.0.1:8976/other' },
      MISMATCH,
    ],
    ['a PKCE failure', { verifier: 'x'.repeat(43) }, PKCE_FAILED],
  ])('rejects %s, and the code stays consumed', async (_case, change, description) => {
    const grant = await authorizeCode(host);
    await expectOAuthError(
      await exchangeCode(host.url, { ...grant, ...change }),
      400,
      'invalid_grant',
      description,
    );
    await expectOAuthError(await exchangeCode(host.url, grant), 400, 'invalid_grant', INVALID_CODE);
  });

  it('checks client and redirect URI before PKCE', async () => {
    const grant = await authorizeCode(host);
    await expectOAuthError(
      await exchangeCode(host.url, { ...grant, clientId: 'other', verifier: 'x'.repeat(43) }),
      400,
      'invalid_grant',
      MISMATCH,
    );
  });

  it('answers exactly one of 20 concurrent exchanges of one code with 200', async () => {
    const grant = await authorizeCode(host);
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => exchangeCode(host.url, grant)),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(1);
    expect(statuses.filter((status) => status === 400)).toHaveLength(19);
  });

  it('answers invalid_request for a missing field without consuming the code', async () => {
    const grant = await authorizeCode(host);
    const response = await exchangeCode(host.url, grant, { code_verifier: undefined });
    await expectOAuthError(response, 400, 'invalid_request');
    expect((await exchangeCode(host.url, grant)).status).toBe(200);
  });

  it('answers invalid_target for a foreign resource without consuming the code', async () => {
    const grant = await authorizeCode(host);
    const response = await exchangeCode(host.url, grant, { resource: 'https://other.example/mcp' });
    await expectOAuthError(response, 400, 'invalid_target');
    expect((await exchangeCode(host.url, grant)).status).toBe(200);
  });

  it('accepts the canonical resource parameter', async () => {
    const grant = await authorizeCode(host);
    const response = await exchangeCode(host.url, grant, { resource: `${host.url}/mcp` });
    expect(response.status).toBe(200);
  });

  it('refuses to exchange a code whose subject lost access after signing in', async () => {
    const grant = await authorizeCode(host);
    host.subjects.set(ALICE.id, { active: false });
    await expectOAuthError(await exchangeCode(host.url, grant), 400, 'invalid_grant', SUBJECT_GONE);
  });

  it('answers unsupported_grant_type for other grants', async () => {
    const response = await postForm(`${host.url}/oauth/token`, {
      grant_type: 'password',
      username: ALICE.email,
      password: ALICE.password,
    });
    await expectOAuthError(response, 400, 'unsupported_grant_type');
  });

  it('answers invalid_request without grant_type', async () => {
    await expectOAuthError(await postForm(`${host.url}/oauth/token`, {}), 400, 'invalid_request');
  });

  it('answers invalid_request to a JSON body', async () => {
    const response = await fetch(`${host.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'authorization_code' }),
    });
    await expectOAuthError(response, 400, 'invalid_request');
  });

  it('answers invalid_request to a text body', async () => {
    const response = await fetch(`${host.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'grant_type=authorization_code',
    });
    await expectOAuthError(response, 400, 'invalid_request');
  });

  it('answers an unsupported media type in the OAuth error shape', async () => {
    const response = await fetch(`${host.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/xml' },
      body: '<grant/>',
    });
    await expectOAuthError(response, 415, 'invalid_request');
  });
});

describe('POST /oauth/token, refresh_token grant', () => {
  const host = hostForSuite();
  // A test that changes what the subject check answers leaves it as it found it.
  afterEach(() => host.subjects.clear());

  it('rotates the refresh token on every use and issues a working access token', async () => {
    const first = await obtainTokens(host);
    const response = await refresh(host.url, first.refresh_token, first.clientId);
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const second = (await response.json()) as TokenResponse;
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(second.scope).toBe('mcp:tools');
    expect(decodeJwt(second.access_token)).toMatchObject({
      sub: ALICE.id,
      client_id: first.clientId,
    });
    expect((await listTools(host.url, `Bearer ${second.access_token}`)).status).toBe(200);
    const third = await refresh(host.url, second.refresh_token, first.clientId);
    expect(third.status).toBe(200);
  });

  it('detects reuse of a rotated token and revokes the whole family', async () => {
    const first = await obtainTokens(host);
    const rotated = (await (
      await refresh(host.url, first.refresh_token, first.clientId)
    ).json()) as TokenResponse;
    // Past the race window, a rotated token presented again is a replay.
    host.clock.advance(RACE_WINDOW_MS);
    await expectOAuthError(
      await refresh(host.url, first.refresh_token, first.clientId),
      400,
      'invalid_grant',
    );
    await expectOAuthError(
      await refresh(host.url, rotated.refresh_token, first.clientId),
      400,
      'invalid_grant',
    );
  });

  it('leaves other families alone when one is revoked', async () => {
    const victim = await obtainTokens(host);
    const bystander = await obtainTokens(host);
    await refresh(host.url, victim.refresh_token, victim.clientId);
    host.clock.advance(RACE_WINDOW_MS);
    await expectOAuthError(
      await refresh(host.url, victim.refresh_token, victim.clientId),
      400,
      'invalid_grant',
    );
    expect((await refresh(host.url, bystander.refresh_token, bystander.clientId)).status).toBe(200);
  });

  it('gives concurrent refreshes of one token exactly one winner whose new token stays valid (20 races)', async () => {
    const tokens = await obtainTokens(host);
    const { first, last } = await refreshRaceChain(
      [`${host.url}/oauth/token`, `${host.url}/oauth/token`],
      { refreshToken: tokens.refresh_token, clientId: tokens.clientId },
    );
    // Within the window a loser's retry is refused without touching the family ...
    await expectOAuthError(await refresh(host.url, first, tokens.clientId), 400, 'invalid_grant');
    // ... after it, the replay revokes the family, the last winner's token included.
    host.clock.advance(RACE_WINDOW_MS);
    await expectOAuthError(await refresh(host.url, first, tokens.clientId), 400, 'invalid_grant');
    await expectOAuthError(await refresh(host.url, last, tokens.clientId), 400, 'invalid_grant');
  });

  it('keeps the winner of a race when its loser is retried within the window', async () => {
    const tokens = await obtainTokens(host);
    const { first, last } = await refreshRaceChain(
      [`${host.url}/oauth/token`, `${host.url}/oauth/token`],
      { refreshToken: tokens.refresh_token, clientId: tokens.clientId },
      1,
    );
    host.clock.advance(RACE_WINDOW_MS - 1);
    await expectOAuthError(await refresh(host.url, first, tokens.clientId), 400, 'invalid_grant');
    expect((await refresh(host.url, last, tokens.clientId)).status).toBe(200);
  });

  it('refuses a refresh token presented by another client without burning it', async () => {
    const tokens = await obtainTokens(host);
    await expectOAuthError(
      await refresh(host.url, tokens.refresh_token, 'other'),
      400,
      'invalid_grant',
    );
    expect((await refresh(host.url, tokens.refresh_token, tokens.clientId)).status).toBe(200);
  });

  it('refuses an unknown refresh token', async () => {
    const tokens = await obtainTokens(host);
    await expectOAuthError(
      await refresh(host.url, 'B'.repeat(43), tokens.clientId),
      400,
      'invalid_grant',
    );
  });

  it('answers invalid_request when refresh_token or client_id is missing', async () => {
    const tokens = await obtainTokens(host);
    const response = await postForm(`${host.url}/oauth/token`, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
    });
    await expectOAuthError(response, 400, 'invalid_request');
    expect((await refresh(host.url, tokens.refresh_token, tokens.clientId)).status).toBe(200);
  });

  it('refuses to refresh for a subject the host no longer knows, and revokes the grant', async () => {
    const tokens = await obtainTokens(host);
    host.subjects.set(ALICE.id, { active: false });
    await expectOAuthError(
      await refresh(host.url, tokens.refresh_token, tokens.clientId),
      400,
      'invalid_grant',
      SUBJECT_GONE,
    );
    // Back in good standing, the revoked grant stays revoked.
    await expectOAuthError(
      await refresh(host.url, tokens.refresh_token, tokens.clientId),
      400,
      'invalid_grant',
      INVALID_REFRESH,
    );
  });

  it('narrows a refreshed grant to the scopes the subject still has, never widening it', async () => {
    const tokens = await obtainTokens(host);
    host.subjects.set(ALICE.id, { active: true, scopes: ['mcp:tools', 'admin:everything'] });
    const response = await refresh(host.url, tokens.refresh_token, tokens.clientId);
    const body = (await response.json()) as TokenResponse;
    expect(body.scope).toBe('mcp:tools');
    expect(decodeJwt(body.access_token).scope).toBe('mcp:tools');
    host.subjects.set(ALICE.id, { active: true, scopes: ['other:scope'] });
    await expectOAuthError(
      await refresh(host.url, body.refresh_token, tokens.clientId),
      400,
      'invalid_grant',
      SUBJECT_GONE,
    );
  });

  it('expires refresh tokens after their lifetime (14 days by default)', async () => {
    const tokens = await obtainTokens(host);
    host.clock.advance(14 * 86_400_000);
    await expectOAuthError(
      await refresh(host.url, tokens.refresh_token, tokens.clientId),
      400,
      'invalid_grant',
    );
  });
});

describe('POST /oauth/token rate limit', () => {
  it('answers 429 with Retry-After beyond the per-IP limit', async () => {
    await withHost({ limits: { tokenRequestsPerIpPerMinute: 2 } }, async (host) => {
      await postForm(`${host.url}/oauth/token`, {});
      await postForm(`${host.url}/oauth/token`, {});
      const refused = await postForm(`${host.url}/oauth/token`, {});
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('60');
    });
  });
});
