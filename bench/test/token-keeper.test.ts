import { describe, expect, it } from 'vitest';
import { type IssuedToken, TokenKeeper } from '../src/kit/token-keeper.js';

describe('the soak token keeper', () => {
  it('renews after 80% of the lifetime, and serves the old token while the issuer is down', async () => {
    let now = 0;
    let issuerUp = true;
    let issued = 0;
    const keeper = new TokenKeeper(
      async (): Promise<IssuedToken> => {
        if (!issuerUp) throw new Error('connection refused');
        issued += 1;
        return { accessToken: `t${issued}`, expiresIn: 100 };
      },
      () => now,
    );

    expect(await keeper.token()).toBe('t1');
    now = 79_000;
    expect(await keeper.token()).toBe('t1');
    expect(issued).toBe(1);

    issuerUp = false;
    now = 81_000;
    expect(await keeper.token()).toBe('t1');
    now = 101_000;
    await expect(keeper.token()).rejects.toThrow('connection refused');

    issuerUp = true;
    expect(await keeper.token()).toBe('t2');
  });
});
