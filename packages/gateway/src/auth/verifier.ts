import {
  addBounded,
  clientNetwork,
  FixedWindowThrottle,
  type JsonObject,
  type JwtFailure,
  type Logger,
  reserveAll,
  sha256Base64Url,
  verifyJwt,
} from '@mcp-identity/common';
import { decodeJwt, decodeProtectedHeader, type JWTPayload } from 'jose';
import type { JwtSettings, KeyManagerConfig } from '../config.js';
import { IntrospectionClient } from './introspection.js';
import { ALLOWED_ALGORITHMS, type AllowedAlgorithm, JwksCache } from './jwks.js';

export interface VerifiedToken {
  payload: JWTPayload;
  /** Name of the key manager whose keys verified the signature, or that introspected it. */
  keyManager: string;
  issuer: string;
  audiences: string[];
  scopes: Set<string>;
  /** Milliseconds since the epoch. */
  expiresAt: number;
}

/**
 * Which check a token failed, for the challenge's public `error_description` (`challenge.ts`
 * words each one); `reason` says more, for the audit line only.
 */
export type TokenCheck =
  | 'no_token'
  | 'malformed_header'
  | 'malformed'
  | 'algorithm'
  | 'unknown_issuer'
  | 'issuer_not_accepted'
  | 'unknown_key'
  | 'bad_signature'
  | 'expired'
  | 'not_yet_valid'
  | 'issued_in_future'
  | 'invalid_claims'
  | 'audience'
  | 'inactive'
  /** Nothing decided: the issuer's keys or introspection endpoint cannot be had now. */
  | 'unavailable'
  /** Nothing decided: this caller's address sent more unknown tokens than may be introspected. */
  | 'throttled';

/** The checks a token fails (a 401); the others decide nothing and are answered otherwise. */
export type FailedCheck = Exclude<TokenCheck, 'unavailable' | 'throttled'>;

export type VerifyResult =
  | { ok: true; token: VerifiedToken }
  | {
      ok: false;
      check: TokenCheck;
      reason: string;
      /**
       * Set when nothing could be decided (`unavailable`, `throttled`). Seconds until the next
       * attempt, for `Retry-After` (RFC 9110 §10.2.3).
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

export function scopesOf(payload: JWTPayload): Set<string> {
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

export function audiencesOf(payload: JWTPayload): string[] {
  if (typeof payload.aud === 'string') return [payload.aud];
  return Array.isArray(payload.aud) ? payload.aud.filter((a) => typeof a === 'string') : [];
}

/** The check a `verifyJwt` failure stands for. */
function checkOf(failure: JwtFailure): TokenCheck {
  if (failure.code === 'ERR_JWT_EXPIRED') return 'expired';
  if (failure.claim === 'nbf' && failure.cause === 'check_failed') return 'not_yet_valid';
  if (failure.claim === 'iat' && failure.cause === 'check_failed') return 'issued_in_future';
  if (failure.claim !== undefined) return 'invalid_claims';
  if (failure.code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED') return 'bad_signature';
  return 'malformed';
}

const refused = (check: TokenCheck, reason: string): VerifyResult => ({ ok: false, check, reason });

/** Introspection answers and pending requests by SHA-256 of the token: opaque tokens have no signature tail. */
interface IntrospectedEntry {
  /** Undefined: the authorization server said inactive (remembered too, so a replay costs nothing). */
  verified: VerifiedToken | undefined;
  until: number;
}

/**
 * Verifies JWTs against the configured key managers: the key manager is chosen by `iss`, its
 * JWKS supplies the key for the header's `kid`, only RS256/PS256/ES256 are accepted (each with
 * its own key type), `exp` is required, and `nbf`/`iat` get the configured leeway. Verified
 * tokens are cached (bounded, never beyond `exp`), so a repeat caller costs a map lookup.
 * Tokens that are not JWTs are introspected (RFC 7662) at the key managers that have an
 * endpoint; their answers are cached too (bounded, never beyond `exp` or the key manager's
 * `cacheTtl`). Per-proxy checks (which issuers, audiences, scopes) are left to the caller.
 */
export class TokenVerifier {
  private readonly jwks = new Map<string, JwksCache>();
  /** Verified tokens by the tail of their signature (`CACHE_KEY_CHARS`). */
  private readonly cache = new Map<string, CacheEntry>();
  private readonly introspection = new Map<string, IntrospectionClient>();
  /** Key managers that introspect tokens that are not JWTs, in configuration order. */
  private readonly introspecting: KeyManagerConfig[];
  private readonly introspected = new Map<string, IntrospectedEntry>();
  /** One introspection per token at a time: concurrent callers with the same token join it. */
  private readonly pending = new Map<string, Promise<VerifyResult>>();
  /**
   * Introspection requests per client address and per network (`clientNetwork`), counted
   * before the request: tokens no one has seen cannot turn into as many requests to the
   * authorization server.
   */
  private readonly perAddress: FixedWindowThrottle;
  private readonly perNetwork: FixedWindowThrottle;

  constructor(
    private readonly keyManagers: KeyManagerConfig[],
    private readonly settings: JwtSettings,
    private readonly now: () => number,
    logger: Logger,
  ) {
    for (const manager of keyManagers) {
      const { jwksUri, introspection } = manager;
      if (jwksUri !== undefined) {
        this.jwks.set(manager.name, new JwksCache({ ...manager, jwksUri }, settings, now, logger));
      }
      if (introspection !== undefined) {
        const timing = {
          timeoutMs: settings.jwksFetchTimeoutMs,
          retryIntervalMs: settings.jwksFetchRetryIntervalMs,
          now,
        };
        this.introspection.set(
          manager.name,
          new IntrospectionClient(manager.name, introspection, timing, logger),
        );
      }
    }
    this.introspecting = keyManagers.filter((km) => km.introspection !== undefined);
    const limit = Math.max(1, settings.introspectionsPerMinute);
    this.perAddress = new FixedWindowThrottle({ limit, windowMs: 60_000, clock: now });
    this.perNetwork = new FixedWindowThrottle({ limit: limit * 10, windowMs: 60_000, clock: now });
  }

  /** Starts fetching every key manager's JWKS, so the first tokens need not wait for it. */
  start(): void {
    for (const cache of this.jwks.values()) cache.start();
  }

  /**
   * Whether every key manager's JWKS was fetched at least once (the gateway's readiness). An
   * introspection endpoint is asked per token, so it holds no readiness back.
   */
  ready(): boolean {
    for (const cache of this.jwks.values()) if (!cache.ready) return false;
    return true;
  }

  /**
   * The verified token for this exact string when it is cached and not expired: a map lookup by
   * the token's signature tail and a comparison, no decoding, so a repeat caller's request needs
   * no promise either. An introspected token is found by its SHA-256.
   */
  cached(token: string): VerifiedToken | undefined {
    const key = cacheKey(token);
    const entry = this.cache.get(key);
    // The whole token is compared only with the cached one whose signature tail the caller
    // sent: what the comparison's time could tell about it, the caller already has.
    if (entry !== undefined && entry.token === token) {
      if (entry.verified.expiresAt > this.now()) return entry.verified;
      this.cache.delete(key);
    }
    if (this.introspection.size === 0) return undefined;
    return this.introspectedEntry(sha256Base64Url(token))?.verified;
  }

  /**
   * Verifies a token that `cached` does not hold, and remembers it when it is valid: a JWT with
   * its issuer's JWKS (or by introspection when that key manager introspects every token or has
   * no JWKS), any other token by introspection at the key managers that have an endpoint, in
   * order. `remoteAddress` is the caller's, counted per introspection request.
   */
  async verify(token: string, remoteAddress: string): Promise<VerifyResult> {
    let alg: string | undefined;
    let kid: string | undefined;
    let issuer: unknown;
    try {
      ({ alg, kid } = decodeProtectedHeader(token));
      issuer = decodeJwt(token).iss;
    } catch {
      if (this.introspecting.length > 0) {
        return this.introspect(token, this.introspecting, remoteAddress);
      }
      return refused('malformed', 'malformed token');
    }
    const manager = this.keyManagers.find((km) => km.issuer === issuer);
    // A key manager without a JWKS can judge its JWTs only by introspection.
    if (
      manager?.introspection &&
      (manager.introspection.allTokens || !this.jwks.has(manager.name))
    ) {
      return this.introspect(token, [manager], remoteAddress);
    }
    if (!(ALLOWED_ALGORITHMS as readonly unknown[]).includes(alg)) {
      return refused('algorithm', `algorithm ${String(alg)} not allowed`);
    }
    if (!manager) return refused('unknown_issuer', 'unknown issuer');
    const lookup = await (this.jwks.get(manager.name) as JwksCache).getKey(
      kid,
      alg as AllowedAlgorithm,
    );
    if (lookup.kind === 'missing') return refused('unknown_key', 'no matching key in the JWKS');
    if (lookup.kind === 'unavailable') {
      return {
        ok: false,
        check: 'unavailable',
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
      const check = checkOf(result);
      return refused(
        check,
        check === 'issued_in_future' ? 'token issued in the future' : result.code,
      );
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
    await Promise.all([
      ...[...this.jwks.values()].map((cache) => cache.close()),
      ...[...this.introspection.values()].map((client) => client.close()),
    ]);
  }

  private introspectedEntry(key: string): IntrospectedEntry | undefined {
    const entry = this.introspected.get(key);
    if (entry === undefined) return undefined;
    if (entry.until > this.now()) return entry;
    this.introspected.delete(key);
    return undefined;
  }

  /** Introspects at `managers` in order (joining a request in flight for the same token). */
  private introspect(
    token: string,
    managers: readonly KeyManagerConfig[],
    remoteAddress: string,
  ): Promise<VerifyResult> {
    const key = sha256Base64Url(token);
    const known = this.introspectedEntry(key);
    if (known) {
      return Promise.resolve(
        known.verified
          ? { ok: true, token: known.verified }
          : refused('inactive', 'token not active (introspection)'),
      );
    }
    let pending = this.pending.get(key);
    if (!pending) {
      const reserved = reserveAll([
        [this.perAddress, remoteAddress],
        [this.perNetwork, clientNetwork(remoteAddress)],
      ]);
      if (!reserved.allowed) {
        return Promise.resolve({
          ok: false,
          check: 'throttled',
          reason: 'introspection requests from this address over the limit',
          retryAfterSeconds: reserved.retryAfterSeconds,
        });
      }
      pending = this.introspectAt(token, key, managers).finally(() => this.pending.delete(key));
      this.pending.set(key, pending);
    }
    return pending;
  }

  private async introspectAt(
    token: string,
    key: string,
    managers: readonly KeyManagerConfig[],
  ): Promise<VerifyResult> {
    let unavailable: VerifyResult | undefined;
    for (const manager of managers) {
      const settings = manager.introspection;
      const client = this.introspection.get(manager.name);
      if (!settings || !client) continue;
      const answer = await client.introspect(token);
      if (answer.kind === 'inactive') continue;
      if (answer.kind === 'unavailable') {
        unavailable ??= {
          ok: false,
          check: 'unavailable',
          reason: `introspection endpoint of key manager ${manager.name} unavailable`,
          retryAfterSeconds: Math.max(1, Math.ceil(answer.retryAfterMs / 1000)),
        };
        continue;
      }
      const result = this.introspectedToken(manager, answer.claims, settings.cacheTtlMs);
      if (result.ok) this.rememberIntrospected(key, result.token, result.token.expiresAt);
      return result;
    }
    // Nothing is remembered while an endpoint is down: its answer may well be "active".
    if (unavailable) return unavailable;
    const ttl = Math.min(...managers.map((km) => km.introspection?.cacheTtlMs ?? 0));
    this.rememberIntrospected(key, undefined, this.now() + ttl);
    return refused('inactive', 'token not active (introspection)');
  }

  /**
   * An active introspection answer as a verified token, after the checks a JWT gets (RFC 7662
   * §2.2 names the same claims): `iss`, when present, is the key manager's; `exp` and `nbf`,
   * when present, hold with the leeway. `active: true` is the authorization server's word that
   * the token is valid now, so neither is required.
   */
  private introspectedToken(
    manager: KeyManagerConfig,
    claims: JsonObject,
    cacheTtlMs: number,
  ): VerifyResult {
    const payload = claims as JWTPayload;
    if (payload.iss !== undefined && payload.iss !== manager.issuer) {
      return refused(
        'unknown_issuer',
        `introspection answer of ${manager.name} names another issuer`,
      );
    }
    const nowSeconds = this.now() / 1000;
    const leeway = this.settings.leewaySeconds;
    for (const claim of ['exp', 'nbf'] as const) {
      const value = payload[claim];
      if (value !== undefined && (typeof value !== 'number' || !Number.isFinite(value))) {
        return refused('invalid_claims', `introspection answer has an invalid ${claim}`);
      }
    }
    if (payload.exp !== undefined && payload.exp <= nowSeconds - leeway) {
      return refused('expired', 'ERR_JWT_EXPIRED (introspection)');
    }
    if (payload.nbf !== undefined && payload.nbf > nowSeconds + leeway) {
      return refused('not_yet_valid', 'token not yet valid (introspection)');
    }
    const until = this.now() + cacheTtlMs;
    return {
      ok: true,
      token: {
        payload,
        keyManager: manager.name,
        issuer: manager.issuer,
        audiences: audiencesOf(payload),
        scopes: scopesOf(payload),
        expiresAt: payload.exp === undefined ? until : Math.min(payload.exp * 1000, until),
      },
    };
  }

  private rememberIntrospected(
    key: string,
    verified: VerifiedToken | undefined,
    until: number,
  ): void {
    if (this.settings.tokenCacheMaxEntries === 0 || until <= this.now()) return;
    addBounded(this.introspected, key, { verified, until }, this.settings.tokenCacheMaxEntries);
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
