import { randomToken, sha256Base64Url } from '@mcp-identity/common';
import type { Db } from '../db.js';

export type CodeGrant = {
  clientId: string;
  userId: string;
  redirectUri: string;
  codeChallenge: string;
  scope: string;
};

export type RefreshGrant = { clientId: string; userId: string; scope: string };

/** Authorization codes and refresh tokens, stored only as SHA-256 hashes. */
export class GrantStore {
  constructor(
    private readonly db: Db,
    private readonly options: {
      codeTtlSeconds: number;
      refreshTtlSeconds: number;
      now: () => number;
    },
  ) {}

  issueCode(grant: CodeGrant): string {
    const code = randomToken(32);
    const now = this.options.now();
    this.db.prepare('DELETE FROM auth_codes WHERE expires_at < ?').run(now);
    this.db
      .prepare(
        `INSERT INTO auth_codes (code_hash, client_id, user_id, redirect_uri, code_challenge, scope, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        sha256Base64Url(code),
        grant.clientId,
        grant.userId,
        grant.redirectUri,
        grant.codeChallenge,
        grant.scope,
        now + this.options.codeTtlSeconds,
      );
    return code;
  }

  /** Removes the code before anything else is checked: a second use always fails. */
  consumeCode(code: string): CodeGrant | undefined {
    const row = this.db
      .prepare('DELETE FROM auth_codes WHERE code_hash = ? RETURNING *')
      .get(sha256Base64Url(code)) as
      | {
          client_id: string;
          user_id: string;
          redirect_uri: string;
          code_challenge: string;
          scope: string;
          expires_at: number;
        }
      | undefined;
    if (!row || row.expires_at < this.options.now()) return undefined;
    return {
      clientId: row.client_id,
      userId: row.user_id,
      redirectUri: row.redirect_uri,
      codeChallenge: row.code_challenge,
      scope: row.scope,
    };
  }

  issueRefreshToken(grant: RefreshGrant): { token: string; expiresAt: number } {
    const token = randomToken(32);
    const now = this.options.now();
    const expiresAt = now + this.options.refreshTtlSeconds;
    this.db.prepare('DELETE FROM refresh_tokens WHERE expires_at < ?').run(now);
    this.db
      .prepare(
        'INSERT INTO refresh_tokens (token_hash, client_id, user_id, scope, expires_at) VALUES (?, ?, ?, ?, ?)',
      )
      .run(sha256Base64Url(token), grant.clientId, grant.userId, grant.scope, expiresAt);
    return { token, expiresAt };
  }

  /** Rotation: the presented refresh token is deleted as it is used. */
  consumeRefreshToken(token: string): RefreshGrant | undefined {
    const row = this.db
      .prepare('DELETE FROM refresh_tokens WHERE token_hash = ? RETURNING *')
      .get(sha256Base64Url(token)) as
      | { client_id: string; user_id: string; scope: string; expires_at: number }
      | undefined;
    if (!row || row.expires_at < this.options.now()) return undefined;
    return { clientId: row.client_id, userId: row.user_id, scope: row.scope };
  }

  findRefreshToken(token: string): (RefreshGrant & { expiresAt: number }) | undefined {
    const row = this.db
      .prepare('SELECT * FROM refresh_tokens WHERE token_hash = ?')
      .get(sha256Base64Url(token)) as
      | { client_id: string; user_id: string; scope: string; expires_at: number }
      | undefined;
    if (!row || row.expires_at < this.options.now()) return undefined;
    return {
      clientId: row.client_id,
      userId: row.user_id,
      scope: row.scope,
      expiresAt: row.expires_at,
    };
  }

  revokeRefreshToken(token: string, clientId: string): void {
    this.db
      .prepare('DELETE FROM refresh_tokens WHERE token_hash = ? AND client_id = ?')
      .run(sha256Base64Url(token), clientId);
  }
}
