import { generateKeyPairSync } from 'node:crypto';
import { checkJwtClaims, type JwtClaimRules, verifyJwt } from '@mcp-identity/common';
import { CompactSign, compactVerify, FlattenedSign, SignJWT, UnsecuredJWT } from 'jose';
import { describe, expect, it } from 'vitest';

const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const other = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const NOW = 1_800_000_000;
const clock = () => NOW * 1000;
const ISSUER = 'https://idp.example';

const sign = (claims: Record<string, unknown>, header: Record<string, unknown> = {}) =>
  new SignJWT(claims).setProtectedHeader({ alg: 'ES256', ...header }).sign(privateKey);

const valid = { iss: ISSUER, sub: 'alice', aud: 'https://rs.example', exp: NOW + 60 };
const rules: JwtClaimRules = { issuer: ISSUER, requiredClaims: ['exp'], clock };

describe('verifyJwt', () => {
  it('gives the header and payload of a token that verifies and satisfies the rules', async () => {
    const result = await verifyJwt(await sign(valid, { kid: 'k1' }), publicKey, {
      algorithms: ['ES256'],
      ...rules,
    });
    expect(result).toMatchObject({ ok: true, payload: valid, header: { kid: 'k1' } });
  });

  it('takes the key from a resolver, and refuses a token for which it has none', async () => {
    const token = await sign(valid, { kid: 'k1' });
    const resolve = (header: { kid?: string }) => (header.kid === 'k1' ? publicKey : undefined);
    expect((await verifyJwt(token, resolve, { algorithms: ['ES256'], ...rules })).ok).toBe(true);
    const unknown = await sign(valid, { kid: 'k2' });
    expect(await verifyJwt(unknown, resolve, { algorithms: ['ES256'], ...rules })).toMatchObject({
      ok: false,
      code: 'ERR_JWKS_NO_MATCHING_KEY',
    });
  });

  it('refuses a signature by another key, an algorithm not pinned, and alg none', async () => {
    const options = { algorithms: ['ES256'], ...rules };
    const forged = await new SignJWT(valid)
      .setProtectedHeader({ alg: 'ES256' })
      .sign(other.privateKey);
    expect(await verifyJwt(forged, publicKey, options)).toMatchObject({
      ok: false,
      code: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
    });
    expect(
      await verifyJwt(await sign(valid), publicKey, { ...options, algorithms: ['RS256'] }),
    ).toMatchObject({ ok: false, code: 'ERR_JOSE_ALG_NOT_ALLOWED' });
    const unsecured = new UnsecuredJWT(valid).encode();
    const none = await verifyJwt(unsecured, publicKey, { ...options, algorithms: ['none'] });
    expect(none.ok).toBe(false);
  });

  it('refuses a payload that is not a JSON object, and any crit header (RFC 7797 b64 too)', async () => {
    const options = { algorithms: ['ES256'], ...rules };
    const array = await new CompactSign(new TextEncoder().encode('[1]'))
      .setProtectedHeader({ alg: 'ES256' })
      .sign(privateKey);
    expect(await verifyJwt(array, publicKey, options)).toMatchObject({
      ok: false,
      code: 'ERR_JWT_INVALID',
    });
    const jws = await new FlattenedSign(new TextEncoder().encode('{"sub":"alice"}'))
      .setProtectedHeader({ alg: 'ES256', b64: false, crit: ['b64'] })
      .sign(privateKey);
    const unencoded = `${jws.protected}.{"sub":"alice"}.${jws.signature}`;
    // The signature itself holds: the refusal is its crit header.
    expect(await compactVerify(unencoded, publicKey)).toBeDefined();
    expect(await verifyJwt(unencoded, publicKey, options)).toMatchObject({
      ok: false,
      code: 'ERR_JOSE_NOT_SUPPORTED',
    });
    const encodedCrit = await sign(valid, { b64: true, crit: ['b64'] });
    expect(await verifyJwt(encodedCrit, publicKey, options)).toMatchObject({
      ok: false,
      code: 'ERR_JOSE_NOT_SUPPORTED',
    });
  });

  it('refuses a malformed token without throwing', async () => {
    expect(await verifyJwt('not.a.jwt', publicKey, { algorithms: ['ES256'] })).toMatchObject({
      ok: false,
      code: 'ERR_JWS_INVALID',
    });
  });
});

describe('checkJwtClaims', () => {
  const check = (payload: Record<string, unknown>, more: JwtClaimRules = {}, typ?: string) =>
    checkJwtClaims({ alg: 'ES256', ...(typ ? { typ } : {}) }, payload, { ...rules, ...more });

  it('accepts claims that satisfy every rule', () => {
    expect(check(valid, { audience: ['https://other', 'https://rs.example'] })).toBeUndefined();
    expect(
      check({ ...valid, aud: ['x', 'https://rs.example'] }, { audience: 'https://rs.example' }),
    ).toBeUndefined();
  });

  it('names the claim that is missing or fails, with jose’s codes', () => {
    const { exp: _, ...noExp } = valid;
    expect(check(noExp)).toMatchObject({ claim: 'exp', cause: 'missing' });
    expect(check({ iss: ISSUER, exp: NOW + 1 }, { requiredClaims: ['exp', 'sub'] })).toMatchObject({
      claim: 'sub',
      cause: 'missing',
    });
    expect(check({ ...valid, iss: 'https://evil.example' })).toMatchObject({
      code: 'ERR_JWT_CLAIM_VALIDATION_FAILED',
      claim: 'iss',
      cause: 'check_failed',
    });
    // An audience is matched exactly, never as a prefix.
    expect(check(valid, { audience: 'https://rs.example/mcp' })).toMatchObject({ claim: 'aud' });
    expect(
      check({ ...valid, aud: 'https://rs.example/mcp' }, { audience: 'https://rs.example' }),
    ).toMatchObject({ claim: 'aud' });
    expect(check({ ...valid, nbf: 'soon' })).toMatchObject({ claim: 'nbf', cause: 'invalid' });
  });

  it('refuses an expired token and one not yet valid, within the tolerance only', () => {
    expect(check({ ...valid, exp: NOW })).toMatchObject({ code: 'ERR_JWT_EXPIRED', claim: 'exp' });
    expect(check({ ...valid, exp: NOW }, { clockToleranceSeconds: 5 })).toBeUndefined();
    expect(check({ ...valid, exp: NOW - 5 }, { clockToleranceSeconds: 5 })).toMatchObject({
      code: 'ERR_JWT_EXPIRED',
    });
    expect(check({ ...valid, nbf: NOW + 1 })).toMatchObject({ claim: 'nbf' });
    expect(check({ ...valid, nbf: NOW + 5 }, { clockToleranceSeconds: 5 })).toBeUndefined();
  });

  it('refuses an iat in the future only when asked to', () => {
    expect(check({ ...valid, iat: NOW + 10 })).toBeUndefined();
    expect(check({ ...valid, iat: NOW + 10 }, { rejectFutureIat: true })).toMatchObject({
      claim: 'iat',
      cause: 'check_failed',
    });
    expect(
      check({ ...valid, iat: NOW + 10 }, { rejectFutureIat: true, clockToleranceSeconds: 10 }),
    ).toBeUndefined();
  });

  it('compares typ as a media type', () => {
    expect(check(valid, { typ: 'at+jwt' }, 'application/at+jwt')).toBeUndefined();
    expect(check(valid, { typ: 'at+jwt' }, 'JWT')).toMatchObject({ claim: 'typ' });
    expect(check(valid, { typ: 'at+jwt' })).toMatchObject({ claim: 'typ' });
  });
});
