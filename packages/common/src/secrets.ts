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

const BASE64URL = /^[A-Za-z0-9_-]{16,}$/;
const POSITIVE_INTEGER = /^[1-9][0-9]{0,9}$/;

interface StoredHash {
  params: { N: number; r: number; p: number; maxmem: number };
  salt: Buffer;
  hash: Buffer;
}

/** A `hashSecret` result taken apart, or why the string is none (a placeholder, a typo). */
function parseStoredHash(stored: string): StoredHash | string {
  const [scheme, n, r, p, salt, hash, ...rest] = stored.split('$');
  if (scheme !== 'scrypt' || rest.length > 0 || hash === undefined)
    return 'must be scrypt$N$r$p$salt$hash, as printed by hash-password';
  if (![n, r, p].every((v) => POSITIVE_INTEGER.test(v ?? '')))
    return 'the scrypt N, r and p must be positive whole numbers';
  const params = { N: Number(n), r: Number(r), p: Number(p), maxmem: SCRYPT.maxmem };
  // Node's scrypt needs N a power of two above 1 and 128·N·r bytes within maxmem.
  if (params.N < 2 || (params.N & (params.N - 1)) !== 0) return 'the scrypt N must be a power of 2';
  if (128 * params.N * params.r > SCRYPT.maxmem) return 'the scrypt N and r need too much memory';
  if (!BASE64URL.test(salt ?? '') || !BASE64URL.test(hash))
    return 'the salt and hash must be base64url, at least 16 characters each';
  return {
    params,
    salt: Buffer.from(salt as string, 'base64url'),
    hash: Buffer.from(hash, 'base64url'),
  };
}

/**
 * Why `stored` is not a `hashSecret` result, or undefined when it is one: configurations check
 * their hashes at start-up, so a placeholder is refused then rather than failing every login.
 */
export function storedHashProblem(stored: string): string | undefined {
  const parsed = parseStoredHash(stored);
  return typeof parsed === 'string' ? parsed : undefined;
}

/** Checks a secret against a `hashSecret` result; a malformed stored hash never matches. */
export async function verifySecret(secret: string, stored: string): Promise<boolean> {
  const parsed = parseStoredHash(stored);
  if (typeof parsed === 'string') return false;
  const { params, salt, hash: expected } = parsed;
  const actual = await scryptAsync(secret, salt, expected.length, params);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
