import {
  isUtf8Body,
  OAuthError,
  oauthTooManyRequests,
  randomToken,
  sha256Base64Url,
  verifyS256,
} from '@mcp-identity/common';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServerContext } from '../context.js';
import { singleParam } from '../context.js';
import type { RefreshTokenEntry, RefreshTokenUse } from '../store.js';

export const INVALID_CODE = 'The authorization code is invalid or expired.';
export const CODE_MISMATCH = 'The authorization code does not match the request.';
export const PKCE_FAILED = 'PKCE verification failed.';
export const INVALID_REFRESH = 'The refresh token is invalid, expired or revoked.';
export const SUBJECT_GONE = 'The account behind this grant no longer has access.';

/** The grant's scopes the subject may still have, in the grant's order (never more). */
function narrowScope(granted: string, allowed: readonly string[]): string {
  const permitted = new Set(allowed);
  return granted
    .split(' ')
    .filter((scope) => scope !== '' && permitted.has(scope))
    .join(' ');
}

type Params<K extends string> = { ok: true; values: Record<K, string> } | { ok: false };

/** Required single-valued parameters; absent or repeated ones make the request malformed. */
function required<K extends string>(body: unknown, names: readonly K[]): Params<K> {
  const values = {} as Record<K, string>;
  for (const name of names) {
    const read = singleParam(body, name);
    if (!read.ok || read.value === undefined) return { ok: false };
    values[name] = read.value;
  }
  return { ok: true, values };
}

export function registerTokenRoute(app: FastifyInstance, ctx: ServerContext): void {
  const perIp = ctx.throttles({
    name: 'token-ip',
    limit: ctx.limits.tokenRequestsPerIpPerMinute,
    windowMs: 60_000,
  });

  /** RFC 8707: a `resource` other than this server's MCP endpoint is refused before any state changes. */
  function resourceProblem(request: FastifyRequest, issuer: string): boolean {
    const resource = singleParam(request.body, 'resource');
    return !resource.ok || (resource.value !== undefined && resource.value !== `${issuer}/mcp`);
  }

  function sendTokens(
    reply: FastifyReply,
    scope: string,
    accessToken: { token: string; expiresIn: number },
    refreshToken: string,
  ): FastifyReply {
    return reply.code(200).header('cache-control', 'no-store').header('pragma', 'no-cache').send({
      access_token: accessToken.token,
      token_type: 'Bearer',
      expires_in: accessToken.expiresIn,
      refresh_token: refreshToken,
      scope,
    });
  }

  /** A refresh token's entry: the grant it continues, living `refreshTokenTtlMs` from now. */
  function refreshEntry(grant: {
    userId: string;
    clientId: string;
    scope: string;
    familyId: string;
  }): RefreshTokenEntry {
    return {
      familyId: grant.familyId,
      userId: grant.userId,
      clientId: grant.clientId,
      scope: grant.scope,
      expiresAt: ctx.clock() + ctx.refreshTokenTtlMs,
    };
  }

  /**
   * Every grant re-checks its subject (a removed account, a lost permission) and narrows its
   * scope; undefined means the subject may not get tokens any more.
   */
  async function currentScope(grant: {
    userId: string;
    clientId: string;
    scope: string;
  }): Promise<string | undefined> {
    const status = await ctx.checkSubject({ userId: grant.userId, clientId: grant.clientId });
    if (!status.active) return undefined;
    const scope = narrowScope(grant.scope, status.scopes);
    return scope === '' ? undefined : scope;
  }

  function accessToken(issuer: string, grant: { userId: string; clientId: string; scope: string }) {
    return ctx.issueAccessToken({
      userId: grant.userId,
      clientId: grant.clientId,
      scope: grant.scope,
      audience: `${issuer}/mcp`,
      issuer,
    });
  }

  /**
   * In this order: consume the code atomically, check its client and redirect URI, PKCE,
   * issue. A failed check leaves the code consumed (RFC 6749 §4.1.2: single use).
   */
  async function authorizationCodeGrant(request: FastifyRequest, reply: FastifyReply) {
    const issuer = ctx.issuer(request);
    const params = required(request.body, ['code', 'client_id', 'redirect_uri', 'code_verifier']);
    if (!params.ok) {
      throw new OAuthError(
        'invalid_request',
        'code, client_id, redirect_uri and code_verifier are required, once each.',
      );
    }
    if (resourceProblem(request, issuer)) {
      throw new OAuthError('invalid_target', `The resource must be ${issuer}/mcp.`);
    }
    const { code, client_id, redirect_uri, code_verifier } = params.values;
    const redemption = await ctx.store.consumeCode(sha256Base64Url(code));
    if (redemption.outcome === 'replayed') {
      request.log.warn(
        { clientId: client_id },
        'authorization code replayed; its grant is revoked',
      );
    }
    if (redemption.outcome !== 'redeemed' || redemption.entry.expiresAt <= ctx.clock()) {
      throw new OAuthError('invalid_grant', INVALID_CODE);
    }
    const entry = redemption.entry;
    if (entry.clientId !== client_id || entry.redirectUri !== redirect_uri) {
      throw new OAuthError('invalid_grant', CODE_MISMATCH);
    }
    if (!verifyS256(code_verifier, entry.codeChallenge)) {
      throw new OAuthError('invalid_grant', PKCE_FAILED);
    }
    const scope = await currentScope(entry);
    if (scope === undefined) throw new OAuthError('invalid_grant', SUBJECT_GONE);
    const grant = { userId: entry.userId, clientId: entry.clientId, scope };
    const token = await accessToken(issuer, grant);
    const refreshToken = randomToken(32);
    await ctx.store.saveRefreshToken(
      sha256Base64Url(refreshToken),
      refreshEntry({ ...grant, familyId: entry.grantId }),
    );
    return sendTokens(reply, scope, token, refreshToken);
  }

  /** A refused presentation; a replay is worth a warning (its family was revoked). */
  function refusedRefresh(request: FastifyRequest, use: RefreshTokenUse): OAuthError {
    if (use.outcome === 'reused') {
      request.log.warn({ clientId: use.entry.clientId }, 'refresh token reused; family revoked');
    }
    return new OAuthError('invalid_grant', INVALID_REFRESH);
  }

  /**
   * Rotation on every use (OAuth 2.1 §4.3.1 for public clients). The token is looked at
   * first and rotated last, so a refused request never burns a good token. The store applies
   * the rule of `RefreshTokenUse`: of concurrent requests with one token exactly one rotates it
   * and the others are refused, the winner's new token staying valid; a token presented after
   * its rotation's race window revokes its whole family, the winner's successor included.
   */
  async function refreshTokenGrant(request: FastifyRequest, reply: FastifyReply) {
    const issuer = ctx.issuer(request);
    const params = required(request.body, ['refresh_token', 'client_id']);
    if (!params.ok) {
      throw new OAuthError(
        'invalid_request',
        'refresh_token and client_id are required, once each.',
      );
    }
    if (resourceProblem(request, issuer)) {
      throw new OAuthError('invalid_target', `The resource must be ${issuer}/mcp.`);
    }
    const tokenHash = sha256Base64Url(params.values.refresh_token);
    const presented = { arrivedAt: ctx.clock(), raceWindowMs: ctx.refreshTokenRaceWindowMs };
    const found = await ctx.store.presentRefreshToken(tokenHash, presented);
    if (found.outcome !== 'live') throw refusedRefresh(request, found);
    const entry = found.entry;
    if (entry.clientId !== params.values.client_id) {
      throw new OAuthError('invalid_grant', 'The refresh token was issued to another client.');
    }
    const scope = await currentScope(entry);
    if (scope === undefined) {
      await ctx.store.revokeFamily(entry.familyId);
      throw new OAuthError('invalid_grant', SUBJECT_GONE);
    }
    const grant = { ...entry, scope };
    const token = await accessToken(issuer, grant);
    const refreshToken = randomToken(32);
    const rotation = await ctx.store.presentRefreshToken(tokenHash, {
      ...presented,
      rotation: {
        rotatedAt: ctx.clock(),
        successorHash: sha256Base64Url(refreshToken),
        successor: refreshEntry(grant),
      },
    });
    if (rotation.outcome !== 'rotated') throw refusedRefresh(request, rotation);
    return sendTokens(reply, scope, token, refreshToken);
  }

  app.post('/oauth/token', async (request, reply) => {
    const decision = await perIp.reserve(request.ip);
    if (!decision.allowed) {
      return oauthTooManyRequests(
        reply,
        decision.retryAfterSeconds,
        'Too many token requests; slow down.',
      );
    }
    const contentType = request.headers['content-type'] ?? '';
    if (
      !contentType.toLowerCase().startsWith('application/x-www-form-urlencoded') ||
      !isUtf8Body(contentType)
    ) {
      throw new OAuthError(
        'invalid_request',
        'The token request must be application/x-www-form-urlencoded, in UTF-8.',
      );
    }
    const grantType = singleParam(request.body, 'grant_type');
    if (!grantType.ok || grantType.value === undefined) {
      throw new OAuthError('invalid_request', 'grant_type is required, once.');
    }
    if (grantType.value === 'authorization_code') return authorizationCodeGrant(request, reply);
    if (grantType.value === 'refresh_token') return refreshTokenGrant(request, reply);
    throw new OAuthError(
      'unsupported_grant_type',
      'Supported grant types are authorization_code and refresh_token.',
    );
  });
}
