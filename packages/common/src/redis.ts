import { once } from 'node:events';
import { Redis } from 'ioredis';
import { UnavailableError } from './errors.js';

/** Redis cannot be reached: the endpoints answer 503 rather than guess (or fail open). */
export class StateUnavailableError extends UnavailableError {
  override readonly code = 'ERR_STATE_UNAVAILABLE';
  readonly statusCode = 503;
  constructor(cause: unknown) {
    super('the shared state store is unavailable', { cause });
  }
}

/**
 * A client of a standalone Redis (or Valkey) for shared short-lived state. While the server is
 * unreachable every command fails at once instead of queueing behind a dead server, and the
 * client keeps reconnecting in the background, so service resumes when Redis is back.
 */
export function connectRedis(url: string): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  });
  // Reconnection is automatic; an unhandled 'error' event would end the process.
  redis.on('error', () => undefined);
  return redis;
}

/** Resolves once connected; rejects after `timeoutMs` (to fail early at start-up). */
export async function redisReady(redis: Redis, timeoutMs = 5_000): Promise<void> {
  if (redis.status === 'ready') return;
  await inRedis(() => once(redis, 'ready', { signal: AbortSignal.timeout(timeoutMs) }));
}

/** Runs a Redis operation, turning any failure of the connection into `StateUnavailableError`. */
export async function inRedis<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    throw new StateUnavailableError(error);
  }
}
