import { FairPool, type FairPoolLimits } from '@mcp-identity/common';
import type { ClientDisplay } from './client-metadata.js';

/**
 * Area A state: clients, codes, authorization transactions and refresh
 * tokens. The plugin talks to this interface only, so a shared store can replace the
 * in-memory one. Codes and refresh tokens are keyed by the SHA-256 of their value, so the
 * store never holds a usable credential. Implementations must make `consumeCode`,
 * `consumeTransaction` and `presentRefreshToken` atomic: of two concurrent calls for the
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

/**
 * A request presenting a refresh token. Without `rotation` the store only looks; with it, the
 * token is marked used and its successor joins the family in the same atomic step, so a family
 * revocation can never miss a successor that a concurrent rotation is about to store.
 */
export interface RefreshPresentation {
  /** When the request arrived (ms): for expiry, and to tell a concurrent request from a replay. */
  arrivedAt: number;
  /**
   * How long after a token's rotation a request presenting it again still counts as concurrent
   * with the one that rotated it (`raced`) rather than as a replay (`reused`).
   */
  raceWindowMs: number;
  rotation?: {
    /** When the rotation happens (ms): the start of the race window. */
    rotatedAt: number;
    /** The SHA-256 of the new token and its entry (same family, subject and client). */
    successorHash: string;
    successor: RefreshTokenEntry;
  };
}

/**
 * What presenting a refresh token found or did. The rule, the same in every store: of any
 * number of requests presenting one token, exactly one rotates it; a request that arrived
 * before that rotation, or within `raceWindowMs` after it, lost a race and is only refused
 * (`raced`), so the winner's new token stays valid; one that arrives later is a replay
 * (RFC 9700 §4.14.2), and the whole family, the successors included, is revoked (`reused`).
 */
export type RefreshTokenUse =
  /** Live and unchanged (a presentation without `rotation`). */
  | { outcome: 'live'; entry: RefreshTokenEntry }
  | { outcome: 'rotated'; entry: RefreshTokenEntry }
  | { outcome: 'unknown' }
  /** Rotated by a request concurrent with this one: refused, the family kept. */
  | { outcome: 'raced' }
  /** Rotated before this request arrived: a replay, the family is now revoked. */
  | { outcome: 'reused'; entry: RefreshTokenEntry };

/** Where a new client comes from, and the cap on live clients (used or not). */
export interface ClientAdmission {
  /** The requester's network (`clientNetwork` of its address). */
  network: string;
  now: number;
  cap: number;
}

/**
 * Where a new login form comes from, and the bounds of pending forms: beyond a quota or the cap
 * the form displaces others by common's `FairPool` rule, never is refused.
 */
export interface LoginAdmission extends FairPoolLimits {
  network: string;
  now: number;
}

export interface OAuthStore {
  /**
   * Stores a new client, never-used and so evictable. With `cap` live clients, the oldest
   * never-used client of the network holding the most goes; `false` (nothing stored) when every
   * live client has been used.
   */
  saveClient(client: RegisteredClient, admission: ClientAdmission): Promise<boolean>;
  /** A user signed in through the client: it is no longer evicted to make room. */
  markClientUsed(clientId: string): Promise<void>;
  getClient(clientId: string): Promise<RegisteredClient | undefined>;

  /** Drops expired codes (and records of redeemed ones) and refresh tokens. */
  pruneExpired(now: number): Promise<void>;
  saveCode(codeHash: string, entry: AuthorizationCodeEntry): Promise<void>;
  /**
   * Removes the code and returns its entry (expired or not). Presenting it again revokes the
   * refresh tokens issued from it so far ("previously issued", RFC 6749 §4.1.2), so a
   * concurrent exchange still in flight keeps its single success.
   */
  consumeCode(codeHash: string): Promise<CodeRedemption>;

  /**
   * Stores a login form's transaction, evicting (never refusing) to stay within the admission's
   * quotas: the requester's network's oldest, the client's oldest from its heaviest network, or
   * the oldest of the heaviest network. An evicted form's submission is refused as expired.
   */
  saveTransaction(
    tokenHash: string,
    transaction: AuthorizationTransaction,
    admission: LoginAdmission,
  ): Promise<void>;
  consumeTransaction(tokenHash: string): Promise<AuthorizationTransaction | undefined>;

  /** Stores the first refresh token of a family (a code exchange). */
  saveRefreshToken(tokenHash: string, entry: RefreshTokenEntry): Promise<void>;
  /** Looks at or rotates a refresh token, atomically; see `RefreshTokenUse` for the rule. */
  presentRefreshToken(
    tokenHash: string,
    presentation: RefreshPresentation,
  ): Promise<RefreshTokenUse>;
  /** Revokes every refresh token of a grant (its subject lost access). */
  revokeFamily(familyId: string): Promise<void>;
}

interface StoredRefreshToken extends RefreshTokenEntry {
  /** When the token was rotated; absent while it is live. */
  rotatedAt?: number;
}

/** Whether a request that arrived at `arrivedAt` was concurrent with a rotation at `rotatedAt`. */
function racedRotation(
  rotatedAt: number,
  presentation: Pick<RefreshPresentation, 'arrivedAt' | 'raceWindowMs'>,
): boolean {
  return presentation.arrivedAt < rotatedAt + presentation.raceWindowMs;
}

/**
 * Drops the entries of `entries` expired at `now` and returns their keys. The map must hold
 * entries of one lifetime in insertion order, so the expired ones are at its front.
 */
function expired<T extends { expiresAt: number }>(entries: Map<string, T>, now: number): string[] {
  const keys: string[] = [];
  for (const [key, entry] of entries) {
    if (entry.expiresAt > now) break;
    keys.push(key);
  }
  for (const key of keys) entries.delete(key);
  return keys;
}

/** The default store: process memory, lost on restart. */
export class MemoryOAuthStore implements OAuthStore {
  /** Live clients, oldest first (they share a lifetime). */
  readonly #clients = new Map<string, RegisteredClient>();
  /** Never-used clients: the ones a registration may displace when the cap is reached. */
  readonly #unusedClients = new FairPool({
    cap: Number.MAX_SAFE_INTEGER,
    perNetwork: Number.MAX_SAFE_INTEGER,
    perClient: Number.MAX_SAFE_INTEGER,
  });
  #pendingLogins: FairPool | undefined;
  readonly #codes = new Map<string, AuthorizationCodeEntry>();
  /** Redeemed codes until they would have expired, to recognise a replay. */
  readonly #redeemedCodes = new Map<string, { grantId: string; expiresAt: number }>();
  /** Pending login transactions, oldest first (they share a lifetime). */
  readonly #transactions = new Map<string, AuthorizationTransaction>();
  readonly #refreshTokens = new Map<string, StoredRefreshToken>();
  readonly #families = new Map<string, Set<string>>();

  async saveClient(client: RegisteredClient, admission: ClientAdmission): Promise<boolean> {
    for (const id of expired(this.#clients, admission.now)) this.#unusedClients.remove(id);
    while (this.#clients.size >= admission.cap) {
      const victim = this.#unusedClients.evictHeaviest();
      if (victim === undefined) return false;
      this.#clients.delete(victim);
    }
    this.#clients.set(client.clientId, client);
    this.#unusedClients.admit(client.clientId, admission.network, '');
    return true;
  }

  async markClientUsed(clientId: string): Promise<void> {
    this.#unusedClients.remove(clientId);
  }

  async getClient(clientId: string): Promise<RegisteredClient | undefined> {
    return this.#clients.get(clientId);
  }

  async pruneExpired(now: number): Promise<void> {
    for (const [key, code] of this.#codes) if (code.expiresAt <= now) this.#codes.delete(key);
    for (const [key, code] of this.#redeemedCodes) {
      if (code.expiresAt <= now) this.#redeemedCodes.delete(key);
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

  async saveTransaction(
    tokenHash: string,
    transaction: AuthorizationTransaction,
    admission: LoginAdmission,
  ): Promise<void> {
    // Created with the first admission's bounds: one plugin's limits do not change.
    const { cap, perNetwork, perClient } = admission;
    this.#pendingLogins ??= new FairPool({ cap, perNetwork, perClient });
    for (const id of expired(this.#transactions, admission.now)) this.#pendingLogins.remove(id);
    const displaced = this.#pendingLogins.admit(tokenHash, admission.network, transaction.clientId);
    for (const id of displaced) this.#transactions.delete(id);
    this.#transactions.set(tokenHash, transaction);
  }

  async consumeTransaction(tokenHash: string): Promise<AuthorizationTransaction | undefined> {
    const transaction = this.#transactions.get(tokenHash);
    this.#transactions.delete(tokenHash);
    this.#pendingLogins?.remove(tokenHash);
    return transaction;
  }

  async saveRefreshToken(tokenHash: string, entry: RefreshTokenEntry): Promise<void> {
    this.#addRefreshToken(tokenHash, entry);
  }

  #addRefreshToken(tokenHash: string, entry: RefreshTokenEntry): void {
    this.#refreshTokens.set(tokenHash, { ...entry });
    let family = this.#families.get(entry.familyId);
    if (family === undefined) {
      family = new Set();
      this.#families.set(entry.familyId, family);
    }
    family.add(tokenHash);
  }

  /** Synchronous from the first read to the last write: atomic in one process. */
  async presentRefreshToken(
    tokenHash: string,
    presentation: RefreshPresentation,
  ): Promise<RefreshTokenUse> {
    const stored = this.#refreshTokens.get(tokenHash);
    if (stored === undefined) return { outcome: 'unknown' };
    const { rotatedAt, ...entry } = stored;
    if (rotatedAt !== undefined) {
      if (racedRotation(rotatedAt, presentation)) return { outcome: 'raced' };
      this.#revokeFamily(entry.familyId);
      return { outcome: 'reused', entry };
    }
    if (entry.expiresAt <= presentation.arrivedAt) {
      this.#forgetRefreshToken(tokenHash, entry.familyId);
      return { outcome: 'unknown' };
    }
    const rotation = presentation.rotation;
    if (rotation === undefined) return { outcome: 'live', entry };
    stored.rotatedAt = rotation.rotatedAt;
    this.#addRefreshToken(rotation.successorHash, {
      ...rotation.successor,
      familyId: entry.familyId,
    });
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
