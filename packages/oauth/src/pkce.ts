import { sha256Base64Url } from '@mcp-identity/common';

/** RFC 7636 §4.1: 43–128 characters from the unreserved set. */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
/** An S256 challenge is Base64Url (no padding) of a 32-byte digest: exactly 43 characters. */
const S256_CHALLENGE = /^[A-Za-z0-9\-_]{43}$/;

export function isS256Challenge(challenge: string): boolean {
  return S256_CHALLENGE.test(challenge);
}

/**
 * Spec §4.1 rule 3.3: Base64Url-no-padding(SHA-256(ASCII verifier)) equals the stored challenge
 * by ordinal comparison. A verifier outside RFC 7636's alphabet can never have produced it.
 */
export function verifyS256(verifier: string, challenge: string): boolean {
  return VERIFIER.test(verifier) && sha256Base64Url(verifier) === challenge;
}
