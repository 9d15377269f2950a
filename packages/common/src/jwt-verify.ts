import {
  compactVerify,
  errors,
  type FlattenedJWSInput,
  type JWSHeaderParameters,
  type JWTPayload,
  type KeyInput,
} from 'jose';
import { type Clock, epochSeconds, systemClock } from './clock.js';

/** A key jose verifies a JWS signature with (a `CryptoKey`, `KeyObject`, JWK or secret). */
export type JwtVerificationKey = KeyInput;

/**
 * The key for a token's protected header (its `kid`, say), or undefined when none matches:
 * the token is then refused with `ERR_JWKS_NO_MATCHING_KEY`.
 */
export type JwtKeyResolver = (
  header: JWSHeaderParameters,
  token: FlattenedJWSInput,
) => JwtVerificationKey | undefined | Promise<JwtVerificationKey | undefined>;

/** What a token's claims (RFC 7519 §4.1) must satisfy. */
export interface JwtClaimRules {
  /** `iss` equal to this one, or to one of these. */
  issuer?: string | readonly string[];
  /** `aud` (a string or an array) naming at least one of these exactly. */
  audience?: string | readonly string[];
  /** Claims that must be present (`exp`, `sub`, ...). */
  requiredClaims?: readonly string[];
  /** The `typ` header (RFC 8725 §3.11), compared as a media type: `at+jwt` = `application/at+jwt`. */
  typ?: string;
  /** Leeway for `exp`, `nbf` (and `iat` with `rejectFutureIat`), seconds. Default 0. */
  clockToleranceSeconds?: number;
  /** Refuse an `iat` later than now (plus the tolerance): a token minted ahead of the clock. */
  rejectFutureIat?: boolean;
  /** Default `systemClock`. */
  clock?: Clock;
}

export interface JwtVerifyOptions extends JwtClaimRules {
  /** Accepted JWS algorithms, pinned; a token naming another is refused before any key is used. */
  algorithms: readonly string[];
}

/**
 * Why a token was refused. `code` is jose's error code (`ERR_JWT_EXPIRED`,
 * `ERR_JWT_CLAIM_VALIDATION_FAILED`, `ERR_JWS_SIGNATURE_VERIFICATION_FAILED`, ...); a claim
 * failure names the `claim` and whether it was `missing`, `invalid` or failed its check.
 */
export interface JwtFailure {
  ok: false;
  code: string;
  message: string;
  claim?: string;
  cause?: 'missing' | 'invalid' | 'check_failed';
}

export type JwtVerification =
  | { ok: true; payload: JWTPayload; header: JWSHeaderParameters }
  | JwtFailure;

function claimFailure(
  claim: string,
  cause: 'missing' | 'invalid' | 'check_failed',
  message: string,
  code = 'ERR_JWT_CLAIM_VALIDATION_FAILED',
): JwtFailure {
  return { ok: false, code, message, claim, cause };
}

const mediaType = (typ: string) => {
  const lower = typ.toLowerCase();
  return lower.includes('/') ? lower : `application/${lower}`;
};

function listOf(value: string | readonly string[]): readonly string[] {
  return typeof value === 'string' ? [value] : value;
}

function namesAudience(aud: unknown, accepted: readonly string[]): boolean {
  if (typeof aud === 'string') return accepted.includes(aud);
  return Array.isArray(aud) && accepted.some((audience) => aud.includes(audience));
}

/** A NumericDate claim (RFC 7519 §2): absent, or a finite number. */
function numericDate(payload: JWTPayload, claim: 'exp' | 'nbf' | 'iat'): JwtFailure | undefined {
  const value = payload[claim];
  if (value === undefined || (typeof value === 'number' && Number.isFinite(value))) return;
  return claimFailure(claim, 'invalid', `"${claim}" claim must be a number`);
}

/**
 * Every claim rule of the repository, in one place (the order and codes of jose's
 * `validateClaimsSet`): `typ`, presence of the required claims (and of `iss`/`aud` when they
 * are checked), `iss`, `aud`, then the NumericDates: not before `nbf`, before `exp` (each with
 * the tolerance), and with `rejectFutureIat` an `iat` not in the future. Undefined when all hold.
 */
export function checkJwtClaims(
  header: JWSHeaderParameters,
  payload: JWTPayload,
  rules: JwtClaimRules,
): JwtFailure | undefined {
  if (
    rules.typ !== undefined &&
    (typeof header.typ !== 'string' || mediaType(header.typ) !== mediaType(rules.typ))
  ) {
    return claimFailure('typ', 'check_failed', 'unexpected "typ" JWT header value');
  }
  const required = [...(rules.requiredClaims ?? [])];
  if (rules.audience !== undefined) required.push('aud');
  if (rules.issuer !== undefined) required.push('iss');
  for (const claim of required) {
    if (!Object.hasOwn(payload, claim)) {
      return claimFailure(claim, 'missing', `missing required "${claim}" claim`);
    }
  }
  if (rules.issuer !== undefined && !listOf(rules.issuer).includes(payload.iss as string)) {
    return claimFailure('iss', 'check_failed', 'unexpected "iss" claim value');
  }
  if (rules.audience !== undefined && !namesAudience(payload.aud, listOf(rules.audience))) {
    return claimFailure('aud', 'check_failed', 'unexpected "aud" claim value');
  }
  const invalid = numericDate(payload, 'iat') ?? numericDate(payload, 'nbf');
  if (invalid) return invalid;
  const tolerance = rules.clockToleranceSeconds ?? 0;
  const now = epochSeconds(rules.clock ?? systemClock);
  if (payload.nbf !== undefined && payload.nbf > now + tolerance) {
    return claimFailure('nbf', 'check_failed', '"nbf" claim timestamp check failed');
  }
  const exp = numericDate(payload, 'exp');
  if (exp) return exp;
  if (payload.exp !== undefined && payload.exp <= now - tolerance) {
    return claimFailure(
      'exp',
      'check_failed',
      '"exp" claim timestamp check failed',
      'ERR_JWT_EXPIRED',
    );
  }
  if (rules.rejectFutureIat && payload.iat !== undefined && payload.iat > now + tolerance) {
    return claimFailure(
      'iat',
      'check_failed',
      '"iat" claim timestamp check failed (in the future)',
    );
  }
  return undefined;
}

/** A JWT Claims Set must be a top-level JSON object (RFC 7519 §7.2 step 10). */
const utf8 = new TextDecoder('utf-8', { fatal: true });

function claimsSetOf(bytes: Uint8Array): JWTPayload | undefined {
  try {
    const value: unknown = JSON.parse(utf8.decode(bytes));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as JWTPayload)
      : undefined;
  } catch {
    return undefined;
  }
}

function resolverFor(resolve: JwtKeyResolver) {
  return async (header: JWSHeaderParameters, token: FlattenedJWSInput) => {
    const key = await resolve(header, token);
    if (key === undefined) throw new errors.JWKSNoMatchingKey();
    return key;
  };
}

/**
 * The repository's one JWT verification: the compact JWS signature with jose (`algorithms`
 * pinned, `alg: none` never), no `crit` header, a payload that is a JSON object, then
 * `checkJwtClaims`. Never throws for a bad
 * token: the failure says why.
 */
export async function verifyJwt(
  token: string,
  key: JwtVerificationKey | JwtKeyResolver,
  options: JwtVerifyOptions,
): Promise<JwtVerification> {
  const algorithms = options.algorithms.filter((alg) => alg.toLowerCase() !== 'none');
  let verified: Awaited<ReturnType<typeof compactVerify>>;
  try {
    verified = await compactVerify(token, typeof key === 'function' ? resolverFor(key) : key, {
      algorithms,
    });
  } catch (error) {
    // Anything else jose throws (a key unfit for the token's algorithm) still refuses the token.
    return error instanceof errors.JOSEError
      ? { ok: false, code: error.code, message: error.message }
      : { ok: false, code: 'ERR_JOSE_GENERIC', message: 'the token cannot be verified' };
  }
  const header = verified.protectedHeader;
  // RFC 7515 §4.1.11: no JWS extension is understood here (jose knows `b64`, RFC 7797, which
  // has no place in a JWT), so any `crit` makes the token invalid.
  if (header.crit !== undefined) {
    return {
      ok: false,
      code: 'ERR_JOSE_NOT_SUPPORTED',
      message: 'no "crit" extension is supported',
    };
  }
  const payload = claimsSetOf(verified.payload);
  if (payload === undefined) {
    return {
      ok: false,
      code: 'ERR_JWT_INVALID',
      message: 'JWT Claims Set must be a top-level JSON object',
    };
  }
  return checkJwtClaims(header, payload, options) ?? { ok: true, payload, header };
}
