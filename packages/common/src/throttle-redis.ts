import type { Redis } from 'ioredis';
import { connectRedis, inRedis, redisReady } from './redis.js';
import { sha256Base64Url } from './secrets.js';
import type { Throttle, ThrottleDecision, ThrottleFactory, ThrottleSpec } from './throttle.js';

/**
 * KEYS: counter. ARGV: limit, window (ms). One round trip: the attempt is counted (the window
 * starts with the first one), and taken back at once when it is over the limit, so a refused
 * attempt does not count, as in `FixedWindowThrottle`. Returns {allowed, ms left}.
 */
const RESERVE = `
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  ttl = tonumber(ARGV[2])
end
if count > tonumber(ARGV[1]) then
  redis.call('DECR', KEYS[1])
  return {0, ttl}
end
return {1, ttl}
`;

/** KEYS: counter. Only a live window's count goes down (a DECR would recreate it forever). */
const RELEASE = `
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count > 0 then redis.call('DECR', KEYS[1]) end
return 1
`;

interface Scripts {
  reserveAttempt(key: string, limit: number, windowMs: number): Promise<[number, number]>;
  releaseAttempt(key: string): Promise<number>;
}

/**
 * A fixed-window attempt counter in Redis, shared by every instance: N concurrent attempts
 * spread over any number of instances can never all pass a limit smaller than N. Keys are
 * hashed, so an e-mail or address is neither stored nor able to make a key long. While Redis
 * is unreachable every call throws `StateUnavailableError` (HTTP 503): a throttle that cannot
 * count refuses rather than fails open.
 */
class RedisThrottle implements Throttle {
  constructor(
    private readonly redis: Redis & Scripts,
    private readonly spec: ThrottleSpec,
    private readonly prefix = 'mcp-identity:throttle:',
  ) {}

  private key(key: string): string {
    return `${this.prefix}${this.spec.name}:${sha256Base64Url(key)}`;
  }

  async reserve(key: string): Promise<ThrottleDecision> {
    const [allowed, ttl] = await inRedis(() =>
      this.redis.reserveAttempt(this.key(key), this.spec.limit, this.spec.windowMs),
    );
    return allowed === 1
      ? { allowed: true }
      : { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(ttl / 1000)) };
  }

  async release(key: string): Promise<void> {
    await inRedis(() => this.redis.releaseAttempt(this.key(key)));
  }

  async reset(key: string): Promise<void> {
    await inRedis(() => this.redis.del(this.key(key)));
  }
}

/** Throttles counting in one Redis (one connection for all of them). */
export interface RedisThrottles {
  factory: ThrottleFactory;
  /** Resolves once connected; rejects after `timeoutMs`. */
  ready(timeoutMs?: number): Promise<void>;
  close(): void;
}

export function createRedisThrottles(url: string, prefix?: string): RedisThrottles {
  const connection = connectRedis(url);
  connection.defineCommand('reserveAttempt', { numberOfKeys: 1, lua: RESERVE });
  connection.defineCommand('releaseAttempt', { numberOfKeys: 1, lua: RELEASE });
  const redis = connection as Redis & Scripts;
  return {
    factory: (spec) => new RedisThrottle(redis, spec, prefix),
    ready: (timeoutMs) => redisReady(redis, timeoutMs),
    close: () => redis.disconnect(),
  };
}
