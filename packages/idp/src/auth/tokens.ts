import { type KeyObject, randomUUID } from 'node:crypto';
import {
  type Clock,
  checkJwtClaims,
  epochSeconds,
  type JwtVerification,
  type JwtVerifyOptions,
  sha256Base64Url,
  verifyJwt,
} from '@mcp-identity/common';
import { decodeJwt, decodeProtectedHeader, type JWSHeaderParameters, type JWTPayload } from 'jose';
import { type Db, statement } from '../store/db.js';
import type { KeyStore } from '../store/keys.js';
import { ReadCache } from '../store/read-cache.js';
import { signRs256 } from './jws.js';
import { TokensAhead } from './tokens-ahead.js';

/**
 * RFC 8693 §4.1 `act`: the party acting for the subject; an `act` inside it is the actor it
 * acted for in turn (the current actor outermost).
 */
export type ActorClaim = { sub: string; act?: ActorClaim };

export type AccessTokenClaims = JWTPayload & {
  sub: string;
  client_id: string;
  scope: string;
  jti: string;
  exp: number;
  iat: number;
  act?: ActorClaim;
};

export type TokenServiceOptions = {
  issuer: string;
  accessTokenTtlSeconds: number;
  clock: Clock;
  /**
   * Whether the user a token was issued to may still use it (exists and is active); checked
   * on every verification, so disabling or deleting a user stops their tokens at once.
   */
  isUserActive: (userId: string) => boolean;
  /**
   * Whether the token being issued is the only request in flight: then it is signed on the
   * event loop rather than on libuv's thread pool (see `signRs256`). Default: never.
   */
  alone?: () => boolean;
};

export type TokenRequest = {
  clientId: string;
  subject: string;
  scopes: string[];
  /** `aud` (RFC 8707 resources the token is for); the client id is always included. */
  audiences?: readonly string[];
  /** RFC 8693 §4.1: who acts for the subject (exchanged tokens). */
  actor?: ActorClaim;
  /** The token expires at this NumericDate at the latest (an exchanged token's subject's `exp`). */
  notAfter?: number;
};

export type IssuedToken = { token: string; expiresIn: number; claims: AccessTokenClaims };

/** Client-credentials tokens have the client as subject; any other subject is a user. */
export const isUserToken = (claims: Pick<AccessTokenClaims, 'sub' | 'client_id'>): boolean =>
  claims.sub !== claims.client_id;

/**
 * Revoked token ids held in memory at most: revocations (RFC 7009, reused grants) are rare and
 * pruned once expired; beyond this many, each verification asks the database instead.
 */
const REVOKED_IN_MEMORY = 256;
/**
 * Tokens signed by this process remembered (by SHA-256) so that verifying one skips the RSA
 * check: tools present each token moments after getting it. Older ones are verified as others.
 */
const SIGNED_REMEMBERED = 8192;

/** Issues and verifies the IdP's JWT access tokens (RS256, `kid` header). */
export class TokenService {
  /** Every revoked `jti`, read again after any write; undefined when there are too many. */
  private readonly revoked: ReadCache<'all', ReadonlySet<string> | undefined>;
  /** Digests of the tokens this process signed lately, oldest first. */
  private readonly signed = new Set<string>();
  /** Client-credentials tokens signed ahead of the request that will take them. */
  private readonly ahead = new TokensAhead(
    (input, kid, key, onEventLoop) => this.sign(input, kid, key, onEventLoop),
    (issued) => this.isCurrent(issued),
  );

  /**
   * RFC 7519 §4.1: RS256 by a key of this issuer (its `kid`), this issuer, not expired (`exp`
   * is required: every token here has one), not before `nbf`. No clock tolerance.
   */
  private readonly rules: JwtVerifyOptions;

  constructor(
    private readonly db: Db,
    private readonly keys: KeyStore,
    private readonly options: TokenServiceOptions,
  ) {
    this.revoked = new ReadCache(db, 1);
    this.rules = {
      algorithms: ['RS256'],
      // The issuer is known once the server listens (`options.issuer` may be a getter).
      get issuer() {
        return options.issuer;
      },
      requiredClaims: ['exp'],
      clock: options.clock,
    };
  }

  get issuer(): string {
    return this.options.issuer;
  }

  /** Now as a JWT NumericDate (RFC 7519 §2: seconds), what `iat`, `nbf` and `exp` count in. */
  private now(): number {
    return epochSeconds(this.options.clock);
  }

  async issue(input: TokenRequest): Promise<IssuedToken> {
    const { kid, key } = this.keys.signingKey();
    const onEventLoop = this.options.alone?.() ?? false;
    // Only client-credentials tokens (the client is the subject) are signed ahead.
    return input.subject === input.clientId
      ? this.ahead.issue(input, kid, key, onEventLoop)
      : this.sign(input, kid, key, onEventLoop);
  }

  /** The claims of a token for `input` issued now, with a fresh `jti`. */
  private claimsFor(input: TokenRequest): AccessTokenClaims {
    const iat = this.now();
    const exp = iat + this.options.accessTokenTtlSeconds;
    return {
      iss: this.options.issuer,
      aud: input.audiences?.length ? [input.clientId, ...input.audiences] : input.clientId,
      sub: input.subject,
      client_id: input.clientId,
      scope: input.scopes.join(' '),
      iat,
      nbf: iat,
      exp: input.notAfter === undefined ? exp : Math.min(exp, input.notAfter),
      jti: randomUUID(),
      ...(input.actor ? { act: input.actor } : {}),
    };
  }

  /** Signs a token for `input`; `onEventLoop`: on the calling thread (see `signRs256`). */
  private async sign(
    input: TokenRequest,
    kid: string,
    key: KeyObject,
    onEventLoop: boolean,
  ): Promise<IssuedToken> {
    const claims = this.claimsFor(input);
    const token = await signRs256({ alg: 'RS256', kid, typ: 'at+jwt' }, claims, key, onEventLoop);
    this.remember(token);
    return { token, expiresIn: claims.exp - claims.iat, claims };
  }

  /** Whether `issued` is what `claimsFor` would give now, but for its `jti`. */
  private isCurrent(issued: IssuedToken): boolean {
    return (
      issued.claims.iat === this.now() &&
      issued.claims.iss === this.options.issuer &&
      issued.expiresIn === this.options.accessTokenTtlSeconds
    );
  }

  private remember(token: string): void {
    if (this.signed.size >= SIGNED_REMEMBERED)
      this.signed.delete(this.signed.values().next().value!);
    this.signed.add(sha256Base64Url(token));
  }

  /** The claims of a valid, unrevoked token of this issuer; undefined otherwise. */
  async verify(token: string): Promise<AccessTokenClaims | undefined> {
    const verified = this.signed.has(sha256Base64Url(token))
      ? this.verifySignedHere(token)
      : await verifyJwt(token, this.keyFor, this.rules);
    if (!verified.ok) return undefined;
    const claims = verified.payload as AccessTokenClaims;
    if (typeof claims.jti !== 'string' || typeof claims.client_id !== 'string') return undefined;
    if (this.isRevoked(claims.jti)) return undefined;
    if (isUserToken(claims) && !this.options.isUserActive(claims.sub)) return undefined;
    return claims;
  }

  private readonly keyFor = (header: JWSHeaderParameters): KeyObject | undefined =>
    typeof header.kid === 'string' ? this.keys.verificationKey(header.kid) : undefined;

  /**
   * A token whose exact bytes this process signed: its signature needs no RSA check, but its
   * key may have been retired since and its claims are judged as any other token's.
   */
  private verifySignedHere(token: string): JwtVerification {
    const header = decodeProtectedHeader(token);
    if (this.keyFor(header) === undefined) {
      return { ok: false, code: 'ERR_JWKS_NO_MATCHING_KEY', message: 'the signing key is retired' };
    }
    const payload = decodeJwt(token);
    return checkJwtClaims(header, payload, this.rules) ?? { ok: true, payload, header };
  }

  revoke(claims: AccessTokenClaims): void {
    const now = this.now();
    statement(this.db, 'DELETE FROM revoked_tokens WHERE expires_at < ?').run(now);
    statement(this.db, 'INSERT OR IGNORE INTO revoked_tokens (jti, expires_at) VALUES (?, ?)').run(
      claims.jti,
      claims.exp,
    );
  }

  private isRevoked(jti: string): boolean {
    const revoked = this.revoked.get('all', () => {
      const jtis = statement(this.db, 'SELECT jti FROM revoked_tokens LIMIT ?')
        .pluck()
        .all(REVOKED_IN_MEMORY + 1) as string[];
      return jtis.length > REVOKED_IN_MEMORY ? undefined : new Set(jtis);
    });
    if (revoked) return revoked.has(jti);
    return statement(this.db, 'SELECT 1 FROM revoked_tokens WHERE jti = ?').get(jti) !== undefined;
  }
}
