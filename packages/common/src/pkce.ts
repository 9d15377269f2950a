import { constantTimeEqual, sha256Base64Url } from './secrets.js';

/** RFC 7636 §4.1: a verifier is 43–128 characters from the unreserved set. */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
/** An S256 challenge is Base64Url (no padding) of a 32-byte digest: exactly 43 characters. */
const S256_CHALLENGE = /^[A-Za-z0-9\-_]{43}$/;

export function isS256Challenge(challenge: string): boolean {
  return S256_CHALLENGE.test(challenge);
}

/** RFC 7636 §4.2: the S256 challenge of a verifier, BASE64URL(SHA256(ASCII(verifier))). */
export function s256Challenge(verifier: string): string {
  return sha256Base64Url(verifier);
}

/**
 * RFC 7636 §4.6: the verifier hashes to the stored challenge. A verifier outside the RFC's
 * alphabet or length is refused before hashing (it can never have produced a conforming
 * challenge), and the digests are compared in constant time.
 */
export function verifyS256(verifier: string, challenge: string): boolean {
  return VERIFIER.test(verifier) && constantTimeEqual(s256Challenge(verifier), challenge);
}
