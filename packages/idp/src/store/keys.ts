import { createPrivateKey, createPublicKey, type KeyObject, randomUUID } from 'node:crypto';
import { type Clock, epochSeconds, InternalError, systemClock } from '@mcp-identity/common';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { type Db, statement } from './db.js';
import { ReadCache } from './read-cache.js';

type SigningKey = { kid: string; key: KeyObject };

/**
 * RS256 signing keys kept in the IdP database (inside the data directory), so a rotation done
 * by the CLI is picked up by a running server. Retired keys stay published in the JWKS for
 * `retentionSeconds` (the longest token lifetime) so tokens they signed keep validating.
 */
export class KeyStore {
  /** KeyObjects by `kid` (private) and `public:<kid>`; a key's material never changes. */
  private readonly imported = new Map<string, KeyObject>();
  /** The active key and the published ones, read again after any write to the database. */
  private readonly active: ReadCache<'active', SigningKey | undefined>;
  private readonly published: ReadCache<
    string,
    { key: KeyObject; retiredAt: number | null } | undefined
  >;

  constructor(
    private readonly db: Db,
    private readonly retentionSeconds: number,
    private readonly clock: Clock = systemClock,
  ) {
    this.active = new ReadCache(db, 1);
    this.published = new ReadCache(db, 64);
  }

  /** Creates the first key when none is active. */
  async ensureActiveKey(): Promise<void> {
    if (!this.activeRow()) await this.rotate();
  }

  /** Creates a new active key and retires the previous one; returns the new `kid`. */
  async rotate(): Promise<string> {
    const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
    const kid = randomUUID();
    const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
    const at = epochSeconds(this.clock);
    this.db.transaction(() => {
      statement(this.db, 'UPDATE signing_keys SET retired_at = ? WHERE retired_at IS NULL').run(at);
      statement(
        this.db,
        'INSERT INTO signing_keys (kid, private_jwk, public_jwk, created_at) VALUES (?, ?, ?, ?)',
      ).run(kid, JSON.stringify(privateJwk), JSON.stringify(publicJwk), at);
    })();
    return kid;
  }

  /** The active key; a rotation (by another process too) is a write, so it is picked up. */
  signingKey(): SigningKey {
    const active = this.active.get('active', () => {
      const row = this.activeRow();
      return (
        row && { kid: row.kid, key: this.importKey(row.kid, row.private_jwk, createPrivateKey) }
      );
    });
    if (!active) throw new InternalError('no active signing key');
    return active;
  }

  /** Public key for `kid` if it is still published. */
  verificationKey(kid: string): KeyObject | undefined {
    const found = this.published.get(kid, () => {
      const row = statement(
        this.db,
        'SELECT public_jwk, retired_at FROM signing_keys WHERE kid = ?',
      ).get(kid) as { public_jwk: string; retired_at: number | null } | undefined;
      return (
        row && {
          key: this.importKey(`public:${kid}`, row.public_jwk, createPublicKey),
          retiredAt: row.retired_at,
        }
      );
    });
    // The retention window moves with the clock, so it is checked on every call.
    const published =
      found &&
      (found.retiredAt === null ||
        found.retiredAt > epochSeconds(this.clock) - this.retentionSeconds);
    return published ? found.key : undefined;
  }

  /** Current and not-yet-expired retired public keys. */
  publishedKeys(): JWK[] {
    const rows = statement(
      this.db,
      'SELECT public_jwk FROM signing_keys WHERE retired_at IS NULL OR retired_at > ? ORDER BY retired_at IS NULL DESC, rowid DESC',
    ).all(epochSeconds(this.clock) - this.retentionSeconds) as { public_jwk: string }[];
    return rows.map((r) => JSON.parse(r.public_jwk) as JWK);
  }

  private activeRow(): { kid: string; private_jwk: string } | undefined {
    return statement(
      this.db,
      'SELECT kid, private_jwk FROM signing_keys WHERE retired_at IS NULL',
    ).get() as { kid: string; private_jwk: string } | undefined;
  }

  private importKey(
    cacheKey: string,
    jwk: string,
    create: typeof createPrivateKey | typeof createPublicKey,
  ): KeyObject {
    let key = this.imported.get(cacheKey);
    if (!key) {
      key = create({ key: JSON.parse(jwk) as JWK & { kty: string }, format: 'jwk' });
      this.imported.set(cacheKey, key);
    }
    return key;
  }
}
