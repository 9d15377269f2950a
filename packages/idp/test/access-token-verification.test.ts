import { createHmac, generateKeyPairSync } from 'node:crypto';
import { type IncomingMessage, request } from 'node:http';
import { decodeJwt, decodeProtectedHeader, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { startTestIdp } from './helpers.js';

const SCOPE = 'internal_user_mgt_list';
const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('the IdP accepts only its own valid access tokens', async () => {
  const idp = await startTestIdp();
  const token = await idp.token([SCOPE]);
  const claims = decodeJwt(token);
  const { kid } = decodeProtectedHeader(token);
  const [header64, payload64, signature64] = token.split('.') as [string, string, string];
  const now = Math.floor(Date.now() / 1000);
  /** Signed with the IdP's own active key, so only the claims or header can be at fault. */
  const signedByIdp = async (
    payload: Record<string, unknown>,
    header: Record<string, unknown> = {},
  ) => {
    const { key } = await idp.admin.keys.signingKey();
    return new SignJWT(payload)
      .setProtectedHeader({ alg: 'RS256', kid: kid as string, typ: 'at+jwt', ...header })
      .sign(key, { crit: { 'exp-ext': true } });
  };
  const usersStatus = async (bearer: string) =>
    (await idp.scim('GET', '/Users?count=1', { token: bearer })).status;

  it('serves a SCIM read with a token it issued, and one it signed with the same claims', async () => {
    expect(await usersStatus(token)).toBe(200);
    expect(await usersStatus(await signedByIdp(claims))).toBe(200);
  });

  it('refuses an unsigned token (alg none)', async () => {
    expect(await usersStatus(`${base64url({ alg: 'none', kid })}.${payload64}.`)).toBe(401);
  });

  it('refuses a token whose claims were changed after signing', async () => {
    const widened = base64url({ ...claims, scope: `${SCOPE} internal_user_mgt_delete` });
    expect(await usersStatus(`${header64}.${widened}.${signature64}`)).toBe(401);
  });

  it('refuses a token signed with another RSA key under the IdP key id', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const forged = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: kid as string })
      .sign(privateKey);
    expect(await usersStatus(forged)).toBe(401);
  });

  it('refuses an HS256 token keyed with the published public key', async () => {
    const jwks = (await (await fetch(idp.jwksUri)).json()) as { keys: { n: string }[] };
    const input = `${base64url({ alg: 'HS256', kid })}.${payload64}`;
    const mac = createHmac('sha256', jwks.keys[0]?.n ?? '')
      .update(input)
      .digest('base64url');
    expect(await usersStatus(`${input}.${mac}`)).toBe(401);
  });

  it('refuses a token of an unknown key id, and one with a critical header extension', async () => {
    expect(await usersStatus(await signedByIdp(claims, { kid: 'retired-long-ago' }))).toBe(401);
    expect(
      await usersStatus(await signedByIdp(claims, { crit: ['exp-ext'], 'exp-ext': true })),
    ).toBe(401);
  });

  it('refuses expired, not-yet-valid and foreign-issuer tokens signed with its own key', async () => {
    expect(await usersStatus(await signedByIdp({ ...claims, exp: now - 1 }))).toBe(401);
    expect(await usersStatus(await signedByIdp({ ...claims, nbf: now + 300 }))).toBe(401);
    expect(await usersStatus(await signedByIdp({ ...claims, iss: 'https://elsewhere' }))).toBe(401);
    expect(await usersStatus(await signedByIdp({ ...claims, iat: 'yesterday' }))).toBe(401);
  });

  it('refuses a token without an expiry, though it never issues one', async () => {
    expect(await usersStatus(await signedByIdp({ ...claims, exp: undefined }))).toBe(401);
  });

  it('refuses a revoked token', async () => {
    const revoked = await idp.token([SCOPE]);
    const response = await fetch(`${idp.url}/oauth2/revoke`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from('admin-app:admin-secret-value').toString('base64')}`,
      },
      body: new URLSearchParams({ token: revoked }),
    });
    expect(response.status).toBe(200);
    expect(await usersStatus(revoked)).toBe(401);
  });
});

describe('the SCIM challenge', async () => {
  const idp = await startTestIdp();

  it('quotes the realm (the Host), so a Host cannot add parameters to the challenge', async () => {
    const { port } = new URL(idp.url);
    const response = await new Promise<IncomingMessage>((resolve, reject) =>
      request({ port, host: '127.0.0.1', path: '/scim2/Users', headers: { host: 'a",error="x' } })
        .on('response', resolve)
        .on('error', reject)
        .end(),
    );
    response.resume();
    expect(response.statusCode).toBe(401);
    expect(response.headers['www-authenticate']).toBe('Bearer realm="a\\",error=\\"x"');
  });
});
