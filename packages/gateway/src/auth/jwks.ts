import { rootCertificates } from 'node:tls';
import type { Logger } from '@mcp-identity/common';
import { importJWK, type JWK } from 'jose';
import { Agent, fetch } from 'undici';
import type { JwtSettings, KeyManagerConfig } from '../config.js';

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

/**
 * One key manager's JWKS: fetched on first use, refreshed in the background when older than
 * the cache TTL (stale keys keep working while the endpoint is down), and refetched at once
 * on an unknown `kid`, at most once per cooldown so forged kids cannot hammer the endpoint.
 */
export class JwksCache {
  private keys: JWK[] = [];
  private readonly imported = new Map<string, VerificationKey>();
  private fetchedAt = Number.NEGATIVE_INFINITY;
  private lastAttempt = Number.NEGATIVE_INFINITY;
  private inflight: Promise<void> | undefined;
  private readonly dispatcher: Agent;

  constructor(
    private readonly manager: KeyManagerConfig,
    private readonly settings: JwtSettings,
    private readonly now: () => number,
    private readonly logger: Logger,
  ) {
    const connect: { rejectUnauthorized: boolean; ca?: string[] } = {
      rejectUnauthorized: !manager.skipTlsVerify,
    };
    if (manager.caCertificate) connect.ca = [...rootCertificates, manager.caCertificate];
    this.dispatcher = new Agent({ connect });
  }

  async getKey(
    kid: string | undefined,
    alg: AllowedAlgorithm,
  ): Promise<VerificationKey | undefined> {
    const canRefetch = this.now() - this.lastAttempt >= this.settings.jwksRefreshCooldownMs;
    if (this.keys.length === 0 && canRefetch) await this.refresh();
    else if (this.now() - this.fetchedAt > this.settings.jwksCacheTtlMs && canRefetch) {
      void this.refresh();
    }
    let jwk = this.find(kid, alg);
    if (
      !jwk &&
      (this.inflight || this.now() - this.lastAttempt >= this.settings.jwksRefreshCooldownMs)
    ) {
      await this.refresh();
      jwk = this.find(kid, alg);
    }
    if (!jwk) return undefined;
    const cacheKey = `${jwk.kid ?? ''}|${alg}|${this.keys.indexOf(jwk)}`;
    let key = this.imported.get(cacheKey);
    if (!key) {
      key = await importJWK(jwk, alg);
      this.imported.set(cacheKey, key);
    }
    return key;
  }

  close(): Promise<void> {
    return this.dispatcher.close();
  }

  private find(kid: string | undefined, alg: AllowedAlgorithm): JWK | undefined {
    const candidates = this.keys.filter((k) => keyFitsAlgorithm(k, alg));
    if (kid !== undefined) return candidates.find((k) => k.kid === kid);
    return candidates.length === 1 ? candidates[0] : undefined;
  }

  private refresh(): Promise<void> {
    this.inflight ??= this.fetchWithRetries().finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  private async fetchWithRetries(): Promise<void> {
    this.lastAttempt = this.now();
    const attempts = this.settings.jwksFetchRetries + 1;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      try {
        const keys = await this.fetchOnce();
        this.keys = keys;
        this.imported.clear();
        this.fetchedAt = this.now();
        return;
      } catch (error) {
        this.logger.warn(
          { keyManager: this.manager.name, attempt, err: (error as Error).message },
          'JWKS fetch failed',
        );
        if (attempt < attempts) {
          await new Promise((resolve) =>
            setTimeout(resolve, this.settings.jwksFetchRetryIntervalMs),
          );
        }
      }
    }
  }

  private async fetchOnce(): Promise<JWK[]> {
    const response = await fetch(this.manager.jwksUri, {
      dispatcher: this.dispatcher,
      signal: AbortSignal.timeout(this.settings.jwksFetchTimeoutMs),
      headers: { accept: 'application/json' },
    });
    if (!response.ok) throw new Error(`JWKS endpoint answered ${response.status}`);
    const body = (await response.json()) as { keys?: unknown };
    if (!Array.isArray(body.keys)) throw new Error('JWKS document has no keys array');
    return body.keys.filter((k): k is JWK => k !== null && typeof k === 'object');
  }
}
