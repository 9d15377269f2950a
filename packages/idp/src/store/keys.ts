import { createPrivateKey, createPublicKey, type KeyObject, randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { type Db, statement } from './db.js';

type SigningKey = { kid: string; key: KeyObject };

/**
 * RS256 signing keys kept in the IdP database (inside the data directory), so a rotation done
 * by the CLI is picked up by a running server. Retired keys stay published in the JWKS for
 * `retentionSeconds` (the longest token lifetime) so tokens they signed keep validating.
 */
export class KeyStore {
  /** KeyObjects by `kid` (private) and `public:<kid>`; a key's material never changes. */
  private readonly imported = new Map<string, KeyObject>();

  constructor(
    private readonly db: Db,
    private readonly retentionSeconds: number,
    private readonly now: () => number = () => Math.floor(Date.now() / 1000),
  ) {}

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
    const at = this.now();
    this.db.transaction(() => {
      statement(this.db, 'UPDATE signing_keys SET retired_at = ? WHERE retired_at IS NULL').run(at);
      statement(
        this.db,
        'INSERT INTO signing_keys (kid, private_jwk, public_jwk, created_at) VALUES (?, ?, ?, ?)',
      ).run(kid, JSON.stringify(privateJwk), JSON.stringify(publicJwk), at);
    })();
    return kid;
  }

  /** The active key, read on every call so a rotation by another process is picked up. */
  signingKey(): SigningKey {
    const row = this.activeRow();
    if (!row) throw new Error('no active signing key');
    return { kid: row.kid, key: this.importKey(row.kid, row.private_jwk, createPrivateKey) };
  }

  /** Public key for `kid` if it is still published. */
  verificationKey(kid: string): KeyObject | undefined {
    const row = statement(
      this.db,
      'SELECT public_jwk FROM signing_keys WHERE kid = ? AND (retired_at IS NULL OR retired_at > ?)',
    ).get(kid, this.now() - this.retentionSeconds) as { public_jwk: string } | undefined;
    return row ? this.importKey(`public:${kid}`, row.public_jwk, createPublicKey) : undefined;
  }

  /** Current and not-yet-expired retired public keys. */
  publishedKeys(): JWK[] {
    const rows = statement(
      this.db,
      'SELECT public_jwk FROM signing_keys WHERE retired_at IS NULL OR retired_at > ? ORDER BY retired_at IS NULL DESC, rowid DESC',
    ).all(this.now() - this.retentionSeconds) as { public_jwk: string }[];
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
