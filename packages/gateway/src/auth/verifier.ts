import { addBounded, type Logger, verifyJwt } from '@mcp-identity/common';
import { decodeJwt, decodeProtectedHeader, type JWTPayload } from 'jose';
import type { JwtSettings, KeyManagerConfig } from '../config.js';
import { ALLOWED_ALGORITHMS, type AllowedAlgorithm, JwksCache } from './jwks.js';

export interface VerifiedToken {
  payload: JWTPayload;
  /** Name of the key manager whose keys verified the signature. */
  keyManager: string;
  issuer: string;
  audiences: string[];
  scopes: Set<string>;
  /** Milliseconds since the epoch. */
  expiresAt: number;
}

export type VerifyResult =
  | { ok: true; token: VerifiedToken }
  | {
      ok: false;
      reason: string;
      /**
       * Set when nothing could be decided: the issuer's keys could not be fetched. Seconds until
       * the next attempt, for `Retry-After` (RFC 9110 §10.2.3).
       */
      retryAfterSeconds?: number;
    };

/**
 * Characters from the end of a token that key the verified-token cache: the tail of its
 * signature, 192 bits for a JWS. Hashing a whole token (some 700 characters) on every lookup
 * cost more than the rest of the lookup; the whole token is still compared on a hit.
 */
const CACHE_KEY_CHARS = 32;

function cacheKey(token: string): string {
  return token.slice(-CACHE_KEY_CHARS);
}

interface CacheEntry {
  token: string;
  verified: VerifiedToken;
}

function scopesOf(payload: JWTPayload): Set<string> {
  const scopes = new Set<string>();
  const add = (value: unknown) => {
    const items = typeof value === 'string' ? value.split(' ') : Array.isArray(value) ? value : [];
    for (const item of items) {
      if (typeof item === 'string' && item !== '') scopes.add(item);
    }
  };
  add(payload.scope);
  add(payload.scp);
  return scopes;
}

function audiencesOf(payload: JWTPayload): string[] {
  if (typeof payload.aud === 'string') return [payload.aud];
  return Array.isArray(payload.aud) ? payload.aud.filter((a) => typeof a === 'string') : [];
}

/**
 * Verifies JWTs against the configured key managers: the key manager is chosen by `iss`, its
 * JWKS supplies the key for the header's `kid`, only RS256/PS256/ES256 are accepted (each with
 * its own key type), `exp` is required, and `nbf`/`iat` get the configured leeway. Verified
 * tokens are cached (bounded, never beyond `exp`), so a repeat caller costs a map lookup.
 * Per-proxy checks (which issuers, audiences, scopes) are left to the caller.
 */
export class TokenVerifier {
  private readonly jwks = new Map<string, JwksCache>();
  /** Verified tokens by the tail of their signature (`CACHE_KEY_CHARS`). */
  private readonly cache = new Map<string, CacheEntry>();

  constructor(
    private readonly keyManagers: KeyManagerConfig[],
    private readonly settings: JwtSettings,
    private readonly now: () => number,
    logger: Logger,
  ) {
    for (const manager of keyManagers) {
      this.jwks.set(manager.name, new JwksCache(manager, settings, now, logger));
    }
  }

  /** Starts fetching every key manager's JWKS, so the first tokens need not wait for it. */
  start(): void {
    for (const cache of this.jwks.values()) cache.start();
  }

  /** Whether every key manager's JWKS was fetched at least once (the gateway's readiness). */
  ready(): boolean {
    for (const cache of this.jwks.values()) if (!cache.ready) return false;
    return true;
  }

  /**
   * The verified token for this exact string when it is cached and not expired: a map lookup by
   * the token's signature tail and a comparison, no decoding, so a repeat caller's request needs
   * no promise either.
   */
  cached(token: string): VerifiedToken | undefined {
    const key = cacheKey(token);
    const entry = this.cache.get(key);
    // The whole token is compared only with the cached one whose signature tail the caller
    // sent: what the comparison's time could tell about it, the caller already has.
    if (entry === undefined || entry.token !== token) return undefined;
    if (entry.verified.expiresAt > this.now()) return entry.verified;
    this.cache.delete(key);
    return undefined;
  }

  /** Verifies a token that `cached` does not hold, and remembers it when it is valid. */
  async verify(token: string): Promise<VerifyResult> {
    let alg: string | undefined;
    let kid: string | undefined;
    let issuer: unknown;
    try {
      ({ alg, kid } = decodeProtectedHeader(token));
      issuer = decodeJwt(token).iss;
    } catch {
      return { ok: false, reason: 'malformed token' };
    }
    if (!(ALLOWED_ALGORITHMS as readonly unknown[]).includes(alg)) {
      return { ok: false, reason: `algorithm ${String(alg)} not allowed` };
    }
    const manager = this.keyManagers.find((km) => km.issuer === issuer);
    if (!manager) return { ok: false, reason: 'unknown issuer' };
    const lookup = await (this.jwks.get(manager.name) as JwksCache).getKey(
      kid,
      alg as AllowedAlgorithm,
    );
    if (lookup.kind === 'missing') return { ok: false, reason: 'no matching key in the JWKS' };
    if (lookup.kind === 'unavailable') {
      return {
        ok: false,
        reason: `JWKS of key manager ${manager.name} unavailable`,
        retryAfterSeconds: Math.max(1, Math.ceil(lookup.retryAfterMs / 1000)),
      };
    }
    const { key } = lookup;

    const result = await verifyJwt(token, key, {
      algorithms: [alg as string],
      issuer: manager.issuer,
      requiredClaims: ['exp'],
      clockToleranceSeconds: this.settings.leewaySeconds,
      rejectFutureIat: true,
      clock: this.now,
    });
    if (!result.ok) {
      const future = result.claim === 'iat' && result.cause === 'check_failed';
      return { ok: false, reason: future ? 'token issued in the future' : result.code };
    }
    const { payload } = result;
    const verified: VerifiedToken = {
      payload,
      keyManager: manager.name,
      issuer: manager.issuer,
      audiences: audiencesOf(payload),
      scopes: scopesOf(payload),
      expiresAt: Math.min(
        (payload.exp as number) * 1000,
        this.now() + this.settings.tokenCacheTtlMs,
      ),
    };
    this.remember(token, verified);
    return { ok: true, token: verified };
  }

  async close(): Promise<void> {
    await Promise.all([...this.jwks.values()].map((cache) => cache.close()));
  }

  private remember(token: string, verified: VerifiedToken): void {
    if (this.settings.tokenCacheMaxEntries === 0) return;
    addBounded(
      this.cache,
      cacheKey(token),
      { token, verified },
      this.settings.tokenCacheMaxEntries,
    );
  }
}
