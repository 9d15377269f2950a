import { randomUUID } from 'node:crypto';
import { type Clock, epochSeconds, randomToken, sha256Base64Url } from '@mcp-identity/common';
import { type Db, inTransaction, statement } from '../store/db.js';

export type CodeGrant = {
  clientId: string;
  userId: string;
  redirectUri: string;
  codeChallenge: string;
  scope: string;
  /** The grant the code starts: the family of every token issued from it. */
  grantId: string;
  /** The API resource (RFC 8707) the authorization was for. */
  resource?: string;
};

export type RefreshGrant = {
  clientId: string;
  userId: string;
  scope: string;
  familyId: string;
  resource?: string;
};

export type CodeRedemption =
  | { outcome: 'redeemed'; grant: CodeGrant }
  | { outcome: 'unknown' }
  /** Redeemed before: the tokens of the first redemption are now revoked (RFC 6749 §4.1.2). */
  | { outcome: 'replayed' };

export type RefreshRotation =
  | { outcome: 'rotated' }
  | { outcome: 'unknown' }
  /** Rotated before: the whole family is now revoked (RFC 9700 §4.14.2). */
  | { outcome: 'reused' };

type CodeRow = {
  client_id: string;
  user_id: string;
  redirect_uri: string;
  code_challenge: string;
  scope: string;
  expires_at: number;
  grant_id: string;
  redeemed: number;
  resource: string | null;
};
type RefreshRow = {
  client_id: string;
  user_id: string;
  scope: string;
  expires_at: number;
  family_id: string;
  used: number;
  resource: string | null;
};

/**
 * Authorization codes and refresh tokens, stored only as SHA-256 hashes. Redeemed codes and
 * rotated refresh tokens are kept (marked) until they expire, so that presenting one again is
 * recognised as a replay and revokes its family: refresh tokens, and the access tokens recorded
 * for the family (the caller marks them revoked with `revokeAccessTokens`).
 */
export class GrantStore {
  constructor(
    private readonly db: Db,
    private readonly options: {
      codeTtlSeconds: number;
      refreshTtlSeconds: number;
      clock: Clock;
    },
  ) {}

  issueCode(grant: Omit<CodeGrant, 'grantId'>): string {
    const code = randomToken(32);
    const now = epochSeconds(this.options.clock);
    statement(this.db, 'DELETE FROM auth_codes WHERE expires_at < ?').run(now);
    statement(
      this.db,
      `INSERT INTO auth_codes (code_hash, client_id, user_id, redirect_uri, code_challenge, scope, expires_at, grant_id, resource)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      sha256Base64Url(code),
      grant.clientId,
      grant.userId,
      grant.redirectUri,
      grant.codeChallenge,
      grant.scope,
      now + this.options.codeTtlSeconds,
      randomUUID(),
      grant.resource ?? null,
    );
    return code;
  }

  /** Marks the code redeemed before anything else is checked: a second use always fails. */
  consumeCode(code: string): CodeRedemption {
    const hash = sha256Base64Url(code);
    return inTransaction(this.db, () => {
      const row = statement(this.db, 'SELECT * FROM auth_codes WHERE code_hash = ?').get(hash) as
        | CodeRow
        | undefined;
      if (!row) return { outcome: 'unknown' };
      if (row.redeemed) {
        this.revokeFamily(row.grant_id);
        return { outcome: 'replayed' };
      }
      statement(this.db, 'UPDATE auth_codes SET redeemed = 1 WHERE code_hash = ?').run(hash);
      if (row.expires_at < epochSeconds(this.options.clock)) return { outcome: 'unknown' };
      return {
        outcome: 'redeemed',
        grant: {
          clientId: row.client_id,
          userId: row.user_id,
          redirectUri: row.redirect_uri,
          codeChallenge: row.code_challenge,
          scope: row.scope,
          grantId: row.grant_id,
          ...(row.resource ? { resource: row.resource } : {}),
        },
      };
    });
  }

  issueRefreshToken(grant: RefreshGrant): { token: string; expiresAt: number } {
    const token = randomToken(32);
    const now = epochSeconds(this.options.clock);
    const expiresAt = now + this.options.refreshTtlSeconds;
    statement(this.db, 'DELETE FROM refresh_tokens WHERE expires_at < ?').run(now);
    statement(
      this.db,
      'INSERT INTO refresh_tokens (token_hash, client_id, user_id, scope, expires_at, family_id, resource) VALUES (?, ?, ?, ?, ?, ?, ?)',
    ).run(
      sha256Base64Url(token),
      grant.clientId,
      grant.userId,
      grant.scope,
      expiresAt,
      grant.familyId,
      grant.resource ?? null,
    );
    return { token, expiresAt };
  }

  /** Records an access token issued in a family, so that revoking the family revokes it. */
  recordAccessToken(familyId: string, jti: string, expiresAt: number): void {
    statement(this.db, 'DELETE FROM family_access_tokens WHERE expires_at < ?').run(
      epochSeconds(this.options.clock),
    );
    statement(
      this.db,
      'INSERT INTO family_access_tokens (jti, family_id, expires_at) VALUES (?, ?, ?)',
    ).run(jti, familyId, expiresAt);
  }

  /** A live (unexpired, not yet rotated) refresh token, without changing it. */
  findRefreshToken(token: string): (RefreshGrant & { expiresAt: number }) | undefined {
    const row = statement(this.db, 'SELECT * FROM refresh_tokens WHERE token_hash = ?').get(
      sha256Base64Url(token),
    ) as RefreshRow | undefined;
    if (!row || row.used || row.expires_at < epochSeconds(this.options.clock)) return undefined;
    return {
      clientId: row.client_id,
      userId: row.user_id,
      scope: row.scope,
      familyId: row.family_id,
      expiresAt: row.expires_at,
      ...(row.resource ? { resource: row.resource } : {}),
    };
  }

  /**
   * Marks a live token used. Presenting a token that was already used revokes its family:
   * either the legitimate client or an attacker holds a stolen copy, and the server cannot
   * tell which.
   */
  rotateRefreshToken(token: string): RefreshRotation {
    const hash = sha256Base64Url(token);
    return inTransaction(this.db, () => {
      const row = statement(this.db, 'SELECT * FROM refresh_tokens WHERE token_hash = ?').get(
        hash,
      ) as RefreshRow | undefined;
      if (!row || row.expires_at < epochSeconds(this.options.clock)) return { outcome: 'unknown' };
      if (row.used) {
        this.revokeFamily(row.family_id);
        return { outcome: 'reused' };
      }
      statement(this.db, 'UPDATE refresh_tokens SET used = 1 WHERE token_hash = ?').run(hash);
      return { outcome: 'rotated' };
    });
  }

  /** Revokes the family of a refresh token (the token's own client only; RFC 7009 §2.1). */
  revokeRefreshToken(token: string, clientId: string): void {
    const row = statement(
      this.db,
      'SELECT family_id FROM refresh_tokens WHERE token_hash = ? AND client_id = ?',
    ).get(sha256Base64Url(token), clientId) as { family_id: string } | undefined;
    if (row) this.revokeFamily(row.family_id);
  }

  /** Revokes a family: its refresh tokens and the access tokens it issued. */
  revokeFamily(familyId: string): void {
    // Deferred: inside a caller's transaction this nests as a savepoint.
    this.db.transaction(() => {
      statement(this.db, 'DELETE FROM refresh_tokens WHERE family_id = ?').run(familyId);
      statement(
        this.db,
        `INSERT OR IGNORE INTO revoked_tokens (jti, expires_at)
           SELECT jti, expires_at FROM family_access_tokens WHERE family_id = ?`,
      ).run(familyId);
    })();
  }
}
