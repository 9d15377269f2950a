import { FixedWindowThrottle, reserveAll } from '@mcp-identity/common';
import { describe, expect, it } from 'vitest';

function clockAt(start = 1_000_000) {
  let now = start;
  return { clock: () => now, advance: (ms: number) => (now += ms) };
}

describe('FixedWindowThrottle', () => {
  it('counts an attempt when it is reserved, so the limit holds for concurrent attempts', async () => {
    const throttle = new FixedWindowThrottle({ limit: 5, windowMs: 60_000 });
    // Forty callers reserve, then all await their slow check: only five get through.
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, async () => {
        const decision = throttle.reserve('alice@example.com');
        await new Promise((resolve) => setImmediate(resolve));
        return decision.allowed;
      }),
    );
    expect(outcomes.filter(Boolean)).toHaveLength(5);
  });

  it('refuses beyond the limit with the seconds until the window ends, then opens a new window', () => {
    const time = clockAt();
    const throttle = new FixedWindowThrottle({ limit: 2, windowMs: 60_000, clock: time.clock });
    expect(throttle.reserve('k')).toEqual({ allowed: true });
    time.advance(15_000);
    expect(throttle.reserve('k')).toEqual({ allowed: true });
    expect(throttle.reserve('k')).toEqual({ allowed: false, retryAfterSeconds: 45 });
    time.advance(44_500);
    expect(throttle.reserve('k')).toEqual({ allowed: false, retryAfterSeconds: 1 });
    time.advance(500);
    expect(throttle.reserve('k')).toEqual({ allowed: true });
  });

  it('keeps keys apart', () => {
    const throttle = new FixedWindowThrottle({ limit: 1, windowMs: 1000 });
    expect(throttle.reserve('a').allowed).toBe(true);
    expect(throttle.reserve('a').allowed).toBe(false);
    expect(throttle.reserve('b').allowed).toBe(true);
  });

  it('gives an attempt back with release and forgets a key with reset', () => {
    const throttle = new FixedWindowThrottle({ limit: 2, windowMs: 1000 });
    throttle.reserve('k');
    throttle.reserve('k');
    throttle.release('k');
    expect(throttle.reserve('k').allowed).toBe(true);
    expect(throttle.reserve('k').allowed).toBe(false);
    throttle.reset('k');
    expect(throttle.reserve('k').allowed).toBe(true);
    throttle.release('unknown');
    expect(throttle.size).toBe(1);
  });

  it('never releases below zero, so releasing cannot buy extra attempts', () => {
    const throttle = new FixedWindowThrottle({ limit: 1, windowMs: 1000 });
    throttle.reserve('k');
    throttle.release('k');
    throttle.release('k');
    throttle.release('k');
    expect(throttle.reserve('k').allowed).toBe(true);
    expect(throttle.reserve('k').allowed).toBe(false);
  });

  it('bounds memory: expired windows are dropped and the oldest open one makes room', () => {
    const time = clockAt();
    const throttle = new FixedWindowThrottle({
      limit: 1,
      windowMs: 1000,
      clock: time.clock,
      maxKeys: 100,
    });
    for (let i = 0; i < 1000; i += 1) throttle.reserve(`key-${i}`);
    expect(throttle.size).toBe(100);
    time.advance(1000);
    throttle.reserve('fresh');
    expect(throttle.size).toBe(1);
  });

  it('refuses invalid settings', () => {
    expect(() => new FixedWindowThrottle({ limit: 0, windowMs: 1000 })).toThrow(/limit/);
    expect(() => new FixedWindowThrottle({ limit: 1, windowMs: 1.5 })).toThrow(/windowMs/);
  });
});

describe('reserveAll', () => {
  it('takes an attempt in every throttle or in none', () => {
    const perAccount = new FixedWindowThrottle({ limit: 5, windowMs: 1000 });
    const perIp = new FixedWindowThrottle({ limit: 1, windowMs: 1000 });
    expect(
      reserveAll([
        [perAccount, 'a'],
        [perIp, 'ip'],
      ]),
    ).toEqual({ allowed: true });
    const refused = reserveAll([
      [perAccount, 'a'],
      [perIp, 'ip'],
    ]);
    expect(refused.allowed).toBe(false);
    // The account's attempt taken before the IP refused was given back: 1 used, 4 left.
    for (let i = 0; i < 4; i += 1) expect(perAccount.reserve('a').allowed).toBe(true);
    expect(perAccount.reserve('a').allowed).toBe(false);
  });
});
