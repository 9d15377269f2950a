import { setTimeout as delay } from 'node:timers/promises';
import { type Logger, UnexpectedResponseError } from '@mcp-identity/common';
import { importJWK, type JWK } from 'jose';
import { type Agent, fetch } from 'undici';
import type { JwtSettings, KeyManagerConfig } from '../config.js';
import { trustedAgent } from './trusted-agent.js';

/** Algorithms the gateway accepts, each bound to the only key type that may verify it. */
export const ALLOWED_ALGORITHMS = ['RS256', 'PS256', 'ES256'] as const;
export type AllowedAlgorithm = (typeof ALLOWED_ALGORITHMS)[number];

function keyFitsAlgorithm(jwk: JWK, alg: AllowedAlgorithm): boolean {
  if (jwk.use !== undefined && jwk.use !== 'sig') return false;
  if (jwk.alg !== undefined && jwk.alg !== alg) return false;
  if (alg === 'ES256') return jwk.kty === 'EC' && jwk.crv === 'P-256';
  return jwk.kty === 'RSA';
}

type VerificationKey = Awaited<ReturnType<typeof importJWK>>;

/** How a key lookup ended. */
export type KeyLookup =
  | { kind: 'found'; key: VerificationKey }
  /** A set fetched after the token arrived has no such key: the token is not the issuer's. */
  | { kind: 'missing' }
  /** No set fetched since the token arrived could be had: nothing can be decided yet. */
  | { kind: 'unavailable'; retryAfterMs: number };

/**
 * One key manager's JWKS. Fetched when the gateway starts and, until one fetch succeeds, again
 * on the backoff below (readiness waits for it). Later, refreshed in the background when older
 * than the cache TTL (stale keys keep working while the endpoint is down), and refetched on an
 * unknown `kid`, so a key the issuer has just published is accepted on first sight.
 *
 * One fetch at a time (every caller joins it) and at least `jwksRefreshCooldownMs` between the
 * starts of two, so a flood of tokens with made-up kids costs one fetch per interval. After a
 * failed fetch the next waits `jwksFetchRetryIntervalMs`, doubled with each further failure up
 * to `jwksFetchRetries` times; meanwhile a lookup that needs the endpoint is answered at once as
 * unavailable, with the time to the next attempt, instead of waiting or guessing.
 */
export class JwksCache {
  private keys: JWK[] = [];
  private readonly imported = new Map<string, VerificationKey>();
  private fetchedAt = Number.NEGATIVE_INFINITY;
  /** When the last fetch started, and when the last one that succeeded did. */
  private lastStart = Number.NEGATIVE_INFINITY;
  private lastGoodStart = Number.NEGATIVE_INFINITY;
  /** Fetches that failed in a row. */
  private failures = 0;
  /** The fetch in flight, or waiting for its slot; resolves to whether it succeeded. */
  private pending: Promise<boolean> | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly dispatcher: Agent;

  constructor(
    private readonly manager: KeyManagerConfig & { jwksUri: string },
    private readonly settings: JwtSettings,
    private readonly now: () => number,
    private readonly logger: Logger,
  ) {
    this.dispatcher = trustedAgent(manager, settings.jwksFetchTimeoutMs);
  }

  /** Whether a key set was ever fetched: until then no token of this issuer can be verified. */
  get ready(): boolean {
    return this.fetchedAt !== Number.NEGATIVE_INFINITY;
  }

  /** The first fetch, retried on the backoff until one succeeds. */
  start(): void {
    void this.fetch();
  }

  async getKey(kid: string | undefined, alg: AllowedAlgorithm): Promise<KeyLookup> {
    const arrivedAt = this.now();
    if (arrivedAt - this.fetchedAt > this.settings.jwksCacheTtlMs && this.mayStart(arrivedAt)) {
      void this.fetch();
    }
    for (;;) {
      const jwk = this.find(kid, alg);
      if (jwk) {
        const key = await this.importKey(jwk, alg);
        return key ? { kind: 'found', key } : { kind: 'missing' };
      }
      if (this.lastGoodStart >= arrivedAt) return { kind: 'missing' };
      // Backing off a failing endpoint: say when it will be tried again rather than wait.
      if (!this.pending && this.failures > 0 && this.now() < this.nextStart()) {
        return this.unavailable();
      }
      // Joins the fetch in flight (then, if it started before this token arrived, the next).
      if (!(await this.fetch())) return this.unavailable();
    }
  }

  /** Abandons a fetch in flight: its keys would serve no one. */
  close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    return this.dispatcher.destroy();
  }

  private find(kid: string | undefined, alg: AllowedAlgorithm): JWK | undefined {
    const candidates = this.keys.filter((k) => keyFitsAlgorithm(k, alg));
    if (kid !== undefined) return candidates.find((k) => k.kid === kid);
    return candidates.length === 1 ? candidates[0] : undefined;
  }

  /** The key, or undefined for a JWK that is no key (a published set is input too). */
  private async importKey(jwk: JWK, alg: AllowedAlgorithm): Promise<VerificationKey | undefined> {
    const cacheKey = `${jwk.kid ?? ''}|${alg}|${this.keys.indexOf(jwk)}`;
    let key = this.imported.get(cacheKey);
    if (!key) {
      key = await importJWK(jwk, alg).catch(() => undefined);
      if (key) this.imported.set(cacheKey, key);
    }
    return key;
  }

  /** The earliest time the next fetch may start. */
  private nextStart(): number {
    const { jwksRefreshCooldownMs, jwksFetchRetryIntervalMs, jwksFetchRetries } = this.settings;
    if (this.failures === 0) return this.lastStart + jwksRefreshCooldownMs;
    const backoff = jwksFetchRetryIntervalMs * 2 ** Math.min(this.failures - 1, jwksFetchRetries);
    return this.lastStart + Math.max(jwksRefreshCooldownMs, backoff);
  }

  private mayStart(at: number): boolean {
    return !this.pending && at >= this.nextStart();
  }

  private unavailable(): KeyLookup {
    return { kind: 'unavailable', retryAfterMs: Math.max(0, this.nextStart() - this.now()) };
  }

  private fetch(): Promise<boolean> {
    this.pending ??= this.fetchInTurn().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async fetchInTurn(): Promise<boolean> {
    for (let wait = this.nextStart() - this.now(); wait > 0; wait = this.nextStart() - this.now()) {
      await delay(wait);
    }
    if (this.closed) return false;
    const startedAt = this.now();
    this.lastStart = startedAt;
    try {
      this.keys = await this.download();
      this.imported.clear();
      this.fetchedAt = this.now();
      this.lastGoodStart = startedAt;
      this.failures = 0;
      return true;
    } catch (error) {
      this.failures += 1;
      const retryInMs = this.nextStart() - this.now();
      this.logger.warn(
        {
          keyManager: this.manager.name,
          failures: this.failures,
          retryInMs,
          err: (error as Error).message,
        },
        'JWKS fetch failed',
      );
      if (!this.ready) this.retryLater(retryInMs);
      return false;
    }
  }

  /** Until the first success the gateway is not ready, so it keeps trying without traffic. */
  private retryLater(delayMs: number): void {
    if (this.closed || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (!this.ready) void this.fetch();
    }, delayMs);
    this.retryTimer.unref();
  }

  private async download(): Promise<JWK[]> {
    const response = await fetch(this.manager.jwksUri, {
      dispatcher: this.dispatcher,
      signal: AbortSignal.timeout(this.settings.jwksFetchTimeoutMs),
      headers: { accept: 'application/json' },
    });
    if (!response.ok)
      throw new UnexpectedResponseError(`JWKS endpoint answered ${response.status}`);
    const body = (await response.json()) as { keys?: unknown };
    if (!Array.isArray(body.keys))
      throw new UnexpectedResponseError('JWKS document has no keys array');
    return body.keys.filter((k): k is JWK => k !== null && typeof k === 'object');
  }
}
