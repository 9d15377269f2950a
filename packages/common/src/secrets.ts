import { createHash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const scryptAsync = promisify(scrypt) as (
  password: string,
  salt: Buffer,
  keylen: number,
  options: { N: number; r: number; p: number; maxmem: number },
) => Promise<Buffer>;

/** Base64Url (no padding) of `bytes` random bytes: codes, client ids, secrets. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/**
 * Compares two secrets without leaking, through timing, how much of them matched.
 * Both sides are hashed first so inputs of different lengths take the same path.
 */
export function constantTimeEqual(a: string, b: string): boolean {
  return secretMatcher(b)(a);
}

/**
 * `constantTimeEqual` against one fixed secret (a configured credential checked on every
 * request), with the secret's digest worked out once. The matcher keeps the digest and the
 * length, not the secret itself.
 */
export function secretMatcher(expected: string): (candidate: string) => boolean {
  const digest = createHash('sha256').update(expected, 'utf8').digest();
  const { length } = expected;
  return (candidate) =>
    timingSafeEqual(createHash('sha256').update(candidate, 'utf8').digest(), digest) &&
    candidate.length === length;
}

/** SHA-256 of a high-entropy secret (refresh tokens, codes): fast lookups, nothing reversible stored. */
export function sha256Base64Url(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('base64url');
}

// OWASP's scrypt baseline (N=2^15, r=8, p=1) for low-entropy secrets chosen by people.
const SCRYPT = { N: 32768, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };
const KEY_LENGTH = 32;

/** Hashes a password or client secret for storage: `scrypt$N$r$p$salt$hash`. */
export async function hashSecret(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scryptAsync(secret, salt, KEY_LENGTH, SCRYPT);
  return [
    'scrypt',
    SCRYPT.N,
    SCRYPT.r,
    SCRYPT.p,
    salt.toString('base64url'),
    hash.toString('base64url'),
  ].join('$');
}

/** Checks a secret against a `hashSecret` result; a malformed stored hash never matches. */
export async function verifySecret(secret: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const params = { N: Number(n), r: Number(r), p: Number(p), maxmem: SCRYPT.maxmem };
  if (![params.N, params.r, params.p].every(Number.isSafeInteger)) return false;
  const actual = await scryptAsync(secret, Buffer.from(salt, 'base64url'), expected.length, params);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
