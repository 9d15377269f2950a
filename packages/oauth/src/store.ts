import type { ClientDisplay } from './client-metadata.js';

/**
 * Area A state: clients, codes, authorization transactions and refresh
 * tokens. The plugin talks to this interface only, so a shared store can replace the
 * in-memory one. Codes and refresh tokens are keyed by the SHA-256 of their value, so the
 * store never holds a usable credential. Implementations must make `consumeCode`,
 * `consumeTransaction` and `rotateRefreshToken` atomic: of two concurrent calls for the
 * same key, exactly one wins.
 */

/** A dynamic client (24-hour lifetime), plus the registered redirect URIs and display metadata (RFC 7591 §2). */
export interface RegisteredClient extends ClientDisplay {
  clientId: string;
  redirectUris: string[];
  issuedAt: number;
  expiresAt: number;
}

/** A single-use, 2-minute authorization code's bindings, plus the grant the code starts (the family of its refresh tokens). */
export interface AuthorizationCodeEntry {
  userId: string;
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  scope: string;
  grantId: string;
  expiresAt: number;
}

/** The server side of one login form: what the form's CSRF token authorizes. */
export interface AuthorizationTransaction {
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  state: string;
  expiresAt: number;
}

export interface RefreshTokenEntry {
  /** The grant (authorization) the token belongs to; revoked as a whole. */
  familyId: string;
  userId: string;
  clientId: string;
  scope: string;
  expiresAt: number;
}

export type CodeRedemption =
  | { outcome: 'redeemed'; entry: AuthorizationCodeEntry }
  | { outcome: 'unknown' }
  /** The code was redeemed before: its grant is now revoked (RFC 9700 §4.2.4 / RFC 6749 §4.1.2). */
  | { outcome: 'replayed'; grantId: string };

export type RefreshRotation =
  | { outcome: 'rotated'; entry: RefreshTokenEntry }
  | { outcome: 'unknown' }
  /** The token had already been rotated: its family is now revoked (RFC 9700 §4.14.2). */
  | { outcome: 'reused'; entry: RefreshTokenEntry };

export interface OAuthStore {
  pruneExpiredClients(now: number): Promise<void>;
  countClients(): Promise<number>;
  saveClient(client: RegisteredClient): Promise<void>;
  getClient(clientId: string): Promise<RegisteredClient | undefined>;

  /** Drops expired codes (and records of redeemed ones), transactions and refresh tokens. */
  pruneExpired(now: number): Promise<void>;
  saveCode(codeHash: string, entry: AuthorizationCodeEntry): Promise<void>;
  /**
   * Removes the code and returns its entry (expired or not). Presenting it again revokes the
   * refresh tokens issued from it so far ("previously issued", RFC 6749 §4.1.2), so a
   * concurrent exchange still in flight keeps its single success.
   */
  consumeCode(codeHash: string): Promise<CodeRedemption>;

  countTransactions(): Promise<number>;
  saveTransaction(tokenHash: string, transaction: AuthorizationTransaction): Promise<void>;
  consumeTransaction(tokenHash: string): Promise<AuthorizationTransaction | undefined>;

  saveRefreshToken(tokenHash: string, entry: RefreshTokenEntry): Promise<void>;
  /** The entry of a live (unexpired, not yet rotated) token, without changing it. */
  getRefreshToken(tokenHash: string, now: number): Promise<RefreshTokenEntry | undefined>;
  /** Marks a live token used and returns its entry; a token already used revokes its family. */
  rotateRefreshToken(tokenHash: string, now: number): Promise<RefreshRotation>;
  /** Revokes every refresh token of a grant (its subject lost access). */
  revokeFamily(familyId: string): Promise<void>;
}

interface StoredRefreshToken extends RefreshTokenEntry {
  used: boolean;
}

/** The default store: process memory, lost on restart. */
export class MemoryOAuthStore implements OAuthStore {
  readonly #clients = new Map<string, RegisteredClient>();
  readonly #codes = new Map<string, AuthorizationCodeEntry>();
  /** Redeemed codes until they would have expired, to recognise a replay. */
  readonly #redeemedCodes = new Map<string, { grantId: string; expiresAt: number }>();
  readonly #transactions = new Map<string, AuthorizationTransaction>();
  readonly #refreshTokens = new Map<string, StoredRefreshToken>();
  readonly #families = new Map<string, Set<string>>();

  async pruneExpiredClients(now: number): Promise<void> {
    for (const [id, client] of this.#clients) if (client.expiresAt <= now) this.#clients.delete(id);
  }

  async countClients(): Promise<number> {
    return this.#clients.size;
  }

  async saveClient(client: RegisteredClient): Promise<void> {
    this.#clients.set(client.clientId, client);
  }

  async getClient(clientId: string): Promise<RegisteredClient | undefined> {
    return this.#clients.get(clientId);
  }

  async pruneExpired(now: number): Promise<void> {
    for (const [key, code] of this.#codes) if (code.expiresAt <= now) this.#codes.delete(key);
    for (const [key, code] of this.#redeemedCodes) {
      if (code.expiresAt <= now) this.#redeemedCodes.delete(key);
    }
    for (const [key, txn] of this.#transactions) {
      if (txn.expiresAt <= now) this.#transactions.delete(key);
    }
    for (const [key, token] of this.#refreshTokens) {
      if (token.expiresAt <= now) this.#forgetRefreshToken(key, token.familyId);
    }
  }

  async saveCode(codeHash: string, entry: AuthorizationCodeEntry): Promise<void> {
    this.#codes.set(codeHash, entry);
  }

  async consumeCode(codeHash: string): Promise<CodeRedemption> {
    const entry = this.#codes.get(codeHash);
    if (entry !== undefined) {
      this.#codes.delete(codeHash);
      this.#redeemedCodes.set(codeHash, { grantId: entry.grantId, expiresAt: entry.expiresAt });
      return { outcome: 'redeemed', entry };
    }
    const redeemed = this.#redeemedCodes.get(codeHash);
    if (redeemed === undefined) return { outcome: 'unknown' };
    this.#revokeFamily(redeemed.grantId);
    return { outcome: 'replayed', grantId: redeemed.grantId };
  }

  async countTransactions(): Promise<number> {
    return this.#transactions.size;
  }

  async saveTransaction(tokenHash: string, transaction: AuthorizationTransaction): Promise<void> {
    this.#transactions.set(tokenHash, transaction);
  }

  async consumeTransaction(tokenHash: string): Promise<AuthorizationTransaction | undefined> {
    const transaction = this.#transactions.get(tokenHash);
    this.#transactions.delete(tokenHash);
    return transaction;
  }

  async saveRefreshToken(tokenHash: string, entry: RefreshTokenEntry): Promise<void> {
    this.#refreshTokens.set(tokenHash, { ...entry, used: false });
    let family = this.#families.get(entry.familyId);
    if (family === undefined) {
      family = new Set();
      this.#families.set(entry.familyId, family);
    }
    family.add(tokenHash);
  }

  async getRefreshToken(tokenHash: string, now: number): Promise<RefreshTokenEntry | undefined> {
    const stored = this.#refreshTokens.get(tokenHash);
    if (stored === undefined || stored.used || stored.expiresAt <= now) return undefined;
    const { used: _used, ...entry } = stored;
    return entry;
  }

  async rotateRefreshToken(tokenHash: string, now: number): Promise<RefreshRotation> {
    const stored = this.#refreshTokens.get(tokenHash);
    if (stored === undefined) return { outcome: 'unknown' };
    const { used, ...entry } = stored;
    if (used) {
      this.#revokeFamily(entry.familyId);
      return { outcome: 'reused', entry };
    }
    if (stored.expiresAt <= now) {
      this.#forgetRefreshToken(tokenHash, entry.familyId);
      return { outcome: 'unknown' };
    }
    stored.used = true;
    return { outcome: 'rotated', entry };
  }

  async revokeFamily(familyId: string): Promise<void> {
    this.#revokeFamily(familyId);
  }

  #forgetRefreshToken(tokenHash: string, familyId: string): void {
    this.#refreshTokens.delete(tokenHash);
    const family = this.#families.get(familyId);
    family?.delete(tokenHash);
    if (family?.size === 0) this.#families.delete(familyId);
  }

  #revokeFamily(familyId: string): void {
    for (const hash of this.#families.get(familyId) ?? []) this.#refreshTokens.delete(hash);
    this.#families.delete(familyId);
  }
}
