import { once } from 'node:events';
import { connect } from 'node:net';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { startTestIdp } from './helpers.js';

const SCOPE = 'internal_user_mgt_list';

/**
 * A token request served alone is signed on the event loop, one served while other requests
 * are in flight on libuv's thread pool (src/auth/jws.ts): both must give tokens that verify
 * against the published keys and open the SCIM API.
 */
describe('tokens signed alone and next to other requests', async () => {
  const idp = await startTestIdp();
  const jwks = createRemoteJWKSet(new URL(`${idp.url}/oauth2/jwks`));
  const check = async (token: string) => {
    const { payload } = await jwtVerify(token, jwks, { issuer: idp.issuer });
    expect(payload.scope).toBe(SCOPE);
    expect((await idp.scim('GET', '/Users?count=1', { token })).status).toBe(200);
  };

  it('verify when issued one at a time', async () => {
    for (let i = 0; i < 3; i++) await check(await idp.token([SCOPE]));
  });

  it('verify when issued while another request is in flight, and concurrently', async () => {
    // A request whose body never comes stays in flight until its connection closes.
    const { port } = new URL(idp.url);
    const pending = connect(Number(port), '127.0.0.1');
    await once(pending, 'connect');
    pending.write(
      'POST /oauth2/token HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
        'Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\n',
    );
    try {
      await check(await idp.token([SCOPE]));
      const tokens = await Promise.all(Array.from({ length: 8 }, () => idp.token([SCOPE])));
      expect(new Set(tokens).size).toBe(8);
      for (const token of tokens) await check(token);
    } finally {
      pending.destroy();
    }
    await check(await idp.token([SCOPE]));
  });
});

/**
 * The IdP remembers the tokens it signed (by digest) and skips the RSA check when one comes
 * back: only those exact bytes may skip it, and every other check still applies.
 */
describe('a token the IdP signed itself skips only the RSA check', async () => {
  let clock = Date.now();
  const idp = await startTestIdp({ clock: () => clock, accessTokenTtlSeconds: 60 });
  const status = async (token: string) =>
    (await idp.scim('GET', '/Users?count=1', { token })).status;

  it('refuses an altered copy of a token it has just signed', async () => {
    const token = await idp.token([SCOPE]);
    const [header64, payload64, signature64] = token.split('.') as [string, string, string];
    const flipped = `${signature64.slice(0, 10)}${signature64[10] === 'A' ? 'B' : 'A'}${signature64.slice(11)}`;
    expect(await status(`${header64}.${payload64}.${flipped}`)).toBe(401);
    const payload = JSON.parse(Buffer.from(payload64, 'base64url').toString()) as {
      scope: string;
    };
    const widened = Buffer.from(
      JSON.stringify({ ...payload, scope: `${payload.scope} internal_user_mgt_delete` }),
    ).toString('base64url');
    expect(await status(`${header64}.${widened}.${signature64}`)).toBe(401);
    expect(await status(token)).toBe(200);
  });

  it('refuses a token it has just signed once it has expired', async () => {
    const token = await idp.token([SCOPE]);
    expect(await status(token)).toBe(200);
    clock += 61_000;
    expect(await status(token)).toBe(401);
  });
});

/**
 * After a client-credentials token, the IdP signs the client's next one ahead (on the thread
 * pool, src/auth/tokens-ahead.ts). A request must still get a token of its own, with the claims
 * of the moment it asked and the key active then, whether or not one was ready for it.
 */
describe('a client-credentials token signed ahead is only handed out as it would be signed now', async () => {
  let clock = Date.now();
  const idp = await startTestIdp({ clock: () => clock });
  const claimsOf = (token: string) =>
    JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as {
      iat: number;
      exp: number;
      jti: string;
      scope: string;
    };

  it('gives every request its own token, issued at the second it was asked for', async () => {
    const jtis = new Set<string>();
    for (let i = 0; i < 20; i++) {
      // Tokens asked within one second, then a second later than the one signed ahead.
      for (const _ of [1, 2]) {
        const token = await idp.token([SCOPE]);
        const claims = claimsOf(token);
        expect(claims.iat).toBe(Math.floor(clock / 1000));
        expect(claims.exp).toBe(claims.iat + 3600);
        jtis.add(claims.jti);
        expect((await idp.scim('GET', '/Users?count=1', { token })).status).toBe(200);
      }
      clock += 1000;
    }
    expect(jtis.size).toBe(40);
  });

  it('signs a token for the scopes asked, not those of the token signed ahead', async () => {
    const other = 'internal_user_mgt_view';
    for (let i = 0; i < 5; i++) {
      expect(claimsOf(await idp.token([SCOPE])).scope).toBe(SCOPE);
      expect(claimsOf(await idp.token([other])).scope).toBe(other);
    }
  });
});
