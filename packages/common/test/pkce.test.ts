import { createHash } from 'node:crypto';
import { isS256Challenge, s256Challenge, verifyS256 } from '@mcp-identity/common';
import { describe, expect, it } from 'vitest';

// RFC 7636 Appendix B.
const RFC_VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
const RFC_CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

describe('PKCE S256 (RFC 7636)', () => {
  it('computes the challenge of RFC 7636 Appendix B', () => {
    expect(s256Challenge(RFC_VERIFIER)).toBe(RFC_CHALLENGE);
    expect(isS256Challenge(RFC_CHALLENGE)).toBe(true);
    expect(isS256Challenge(`${RFC_CHALLENGE}=`)).toBe(false);
  });

  it('accepts the verifier that produced the challenge and refuses any other', () => {
    expect(verifyS256(RFC_VERIFIER, RFC_CHALLENGE)).toBe(true);
    expect(verifyS256(`${RFC_VERIFIER.slice(0, -1)}Y`, RFC_CHALLENGE)).toBe(false);
    expect(verifyS256(RFC_VERIFIER, `${RFC_CHALLENGE}x`)).toBe(false);
  });

  it('refuses verifiers outside the RFC alphabet or length even when they hash to the challenge', () => {
    for (const verifier of [
      'short',
      'a'.repeat(42),
      'a'.repeat(129),
      `${'a'.repeat(43)} `,
      `${'a'.repeat(43)}+`,
    ]) {
      const challenge = createHash('sha256').update(verifier, 'ascii').digest('base64url');
      expect(verifyS256(verifier, challenge)).toBe(false);
    }
    expect(verifyS256('a'.repeat(43), s256Challenge('a'.repeat(43)))).toBe(true);
    expect(verifyS256('~'.repeat(128), s256Challenge('~'.repeat(128)))).toBe(true);
  });
});
