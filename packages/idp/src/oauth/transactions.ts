import {
  type Clock,
  epochSeconds,
  FairPool,
  randomToken,
  sha256Base64Url,
} from '@mcp-identity/common';
import { type Db, inTransaction, statement } from '../store/db.js';

/**
 * The server side of each rendered login form. The form's CSRF token names one transaction
 * holding the exact authorize parameters it was rendered for; submitting the form consumes it,
 * so a token can be used once, only for those parameters, and never be chosen by a third party.
 * Stored as SHA-256 hashes.
 *
 * The number of pending forms is bounded without ever refusing one (common's `FairPool`): a
 * new form beyond a quota or the cap replaces the oldest form of the network (`clientNetwork`)
 * holding the most, so a flood of authorize requests from many addresses pushes out its own
 * forms first and a person from any other network still gets one. A replaced form's
 * submission is answered as an expired one.
 */
export class LoginTransactions {
  private readonly pool: FairPool;

  constructor(
    private readonly db: Db,
    private readonly options: {
      ttlSeconds: number;
      /** Pending forms kept at most. */
      maxPending: number;
      /** Pending forms per client network. */
      perNetwork: number;
      /** Pending forms per client id. */
      perClient: number;
      clock: Clock;
    },
  ) {
    this.pool = new FairPool({
      cap: options.maxPending,
      perNetwork: options.perNetwork,
      perClient: options.perClient,
    });
    // The forms pending before a restart count again, oldest first.
    inTransaction(db, () => {
      this.dropExpired();
      const rows = statement(
        db,
        'SELECT token_hash, network, client_id FROM login_transactions ORDER BY expires_at, rowid',
      ).all() as { token_hash: string; network: string; client_id: string }[];
      for (const row of rows) {
        this.drop(this.pool.admit(row.token_hash, row.network, row.client_id));
      }
    });
  }

  /** A new transaction's token, for a form shown to `network` (the client's /24 or /64). */
  open(params: Readonly<Record<string, string>>, network: string): string {
    const token = randomToken(32);
    const tokenHash = sha256Base64Url(token);
    const clientId = params.client_id ?? '';
    inTransaction(this.db, () => {
      this.dropExpired();
      this.drop(this.pool.admit(tokenHash, network, clientId));
      try {
        statement(
          this.db,
          `INSERT INTO login_transactions (token_hash, params, expires_at, network, client_id)
             VALUES (?, ?, ?, ?, ?)`,
        ).run(
          tokenHash,
          canonical(params),
          epochSeconds(this.options.clock) + this.options.ttlSeconds,
          network,
          clientId,
        );
      } catch (error) {
        this.pool.remove(tokenHash);
        throw error;
      }
    });
    return token;
  }

  /** Consumes the transaction; true when it was live and made for exactly `params`. */
  consume(token: string, params: Readonly<Record<string, string>>): boolean {
    const tokenHash = sha256Base64Url(token);
    const row = statement(
      this.db,
      'DELETE FROM login_transactions WHERE token_hash = ? RETURNING params, expires_at',
    ).get(tokenHash) as { params: string; expires_at: number } | undefined;
    this.pool.remove(tokenHash);
    return (
      row !== undefined &&
      row.expires_at >= epochSeconds(this.options.clock) &&
      row.params === canonical(params)
    );
  }

  private dropExpired(): void {
    const expired = statement(
      this.db,
      'DELETE FROM login_transactions WHERE expires_at < ? RETURNING token_hash',
    ).all(epochSeconds(this.options.clock)) as { token_hash: string }[];
    for (const { token_hash } of expired) this.pool.remove(token_hash);
  }

  private drop(tokenHashes: readonly string[]): void {
    for (const tokenHash of tokenHashes) {
      statement(this.db, 'DELETE FROM login_transactions WHERE token_hash = ?').run(tokenHash);
    }
  }
}

function canonical(params: Readonly<Record<string, string>>): string {
  return JSON.stringify(Object.entries(params).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
