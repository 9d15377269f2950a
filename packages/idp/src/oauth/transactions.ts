import { randomToken, sha256Base64Url } from '@mcp-identity/common';
import { type Db, statement } from '../store/db.js';

/**
 * The server side of each rendered login form. The form's CSRF token names one transaction
 * holding the exact authorize parameters it was rendered for; submitting the form consumes it,
 * so a token can be used once, only for those parameters, and never be chosen by a third party.
 * Stored as SHA-256 hashes; the number of pending forms is bounded.
 */
export class LoginTransactions {
  constructor(
    private readonly db: Db,
    private readonly options: { ttlSeconds: number; maxPending: number; now: () => number },
  ) {}

  /** A new transaction's token, or undefined when too many forms are pending. */
  open(params: Readonly<Record<string, string>>): string | undefined {
    const now = this.options.now();
    statement(this.db, 'DELETE FROM login_transactions WHERE expires_at < ?').run(now);
    const { pending } = statement(
      this.db,
      'SELECT count(*) AS pending FROM login_transactions',
    ).get() as {
      pending: number;
    };
    if (pending >= this.options.maxPending) return undefined;
    const token = randomToken(32);
    statement(
      this.db,
      'INSERT INTO login_transactions (token_hash, params, expires_at) VALUES (?, ?, ?)',
    ).run(sha256Base64Url(token), canonical(params), now + this.options.ttlSeconds);
    return token;
  }

  /** Consumes the transaction; true when it was live and made for exactly `params`. */
  consume(token: string, params: Readonly<Record<string, string>>): boolean {
    const row = statement(
      this.db,
      'DELETE FROM login_transactions WHERE token_hash = ? RETURNING params, expires_at',
    ).get(sha256Base64Url(token)) as { params: string; expires_at: number } | undefined;
    return (
      row !== undefined && row.expires_at >= this.options.now() && row.params === canonical(params)
    );
  }
}

function canonical(params: Readonly<Record<string, string>>): string {
  return JSON.stringify(Object.entries(params).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
