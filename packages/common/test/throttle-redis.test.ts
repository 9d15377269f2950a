import {
  createRedisThrottles,
  memoryThrottles,
  type RedisThrottles,
  reserveEach,
  StateUnavailableError,
} from '@mcp-identity/common';
import {
  describeRequiring,
  redisMissing,
  startRedis,
  type TestRedis,
} from '@mcp-identity/common/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';

describeRequiring('RedisThrottle', redisMissing(), () => {
  let redis: TestRedis;
  // Two connections stand for two instances sharing one Redis.
  let first: RedisThrottles;
  let second: RedisThrottles;

  beforeAll(async () => {
    redis = await startRedis();
    first = createRedisThrottles(redis.url);
    second = createRedisThrottles(redis.url);
    await Promise.all([first.ready(), second.ready()]);
  });
  afterAll(async () => {
    first?.close();
    second?.close();
    await redis?.close();
  });

  it('lets at most limit concurrent reservations through across instances', async () => {
    const spec = { name: 'concurrent', limit: 5, windowMs: 60_000 };
    const throttles = [first.factory(spec), second.factory(spec)];
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => (await throttles[i % 2]?.reserve('k'))?.allowed),
    );
    expect(outcomes.filter(Boolean)).toHaveLength(5);
  });

  it('refuses without counting, with the seconds left in the window', async () => {
    const spec = { name: 'window', limit: 1, windowMs: 30_000 };
    const throttle = first.factory(spec);
    expect(await throttle.reserve('k')).toEqual({ allowed: true });
    expect(await throttle.reserve('k')).toEqual({ allowed: false, retryAfterSeconds: 30 });
    // A refusal did not count: one release frees the single slot.
    await second.factory(spec).release('k');
    expect(await throttle.reserve('k')).toEqual({ allowed: true });
  });

  it('opens a new window when the old one expires', async () => {
    const throttle = first.factory({ name: 'expiry', limit: 1, windowMs: 50 });
    expect((await throttle.reserve('k')).allowed).toBe(true);
    expect((await throttle.reserve('k')).allowed).toBe(false);
    const deadline = Date.now() + 5_000;
    let allowed = false;
    while (!allowed && Date.now() < deadline) allowed = (await throttle.reserve('k')).allowed;
    expect(allowed).toBe(true);
  });

  it('keeps names and keys apart, and reset forgets a key', async () => {
    const a = first.factory({ name: 'a', limit: 1, windowMs: 60_000 });
    const b = first.factory({ name: 'b', limit: 1, windowMs: 60_000 });
    expect((await a.reserve('k')).allowed).toBe(true);
    expect((await b.reserve('k')).allowed).toBe(true);
    expect((await a.reserve('other')).allowed).toBe(true);
    expect((await a.reserve('k')).allowed).toBe(false);
    await a.reset('k');
    expect((await a.reserve('k')).allowed).toBe(true);
  });

  it('gives back earlier reservations when a later one is refused, with memory and Redis mixed', async () => {
    const shared = first.factory({ name: 'mixed', limit: 1, windowMs: 60_000 });
    const local = memoryThrottles()({ name: 'mixed', limit: 1, windowMs: 60_000 });
    await local.reserve('ip');
    expect(
      await reserveEach([
        [shared, 'account'],
        [local, 'ip'],
      ]),
    ).toMatchObject({ allowed: false });
    expect((await shared.reserve('account')).allowed).toBe(true);
  });

  it('throws StateUnavailableError while Redis is down (never fails open), then recovers', async () => {
    const throttle = first.factory({ name: 'outage', limit: 100, windowMs: 60_000 });
    await redis.stop();
    try {
      await expect(throttle.reserve('k')).rejects.toBeInstanceOf(StateUnavailableError);
    } finally {
      await redis.start();
    }
    await first.ready(10_000);
    expect((await throttle.reserve('k')).allowed).toBe(true);
  });
});
