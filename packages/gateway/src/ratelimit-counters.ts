import {
  addBounded,
  createRedisThrottles,
  FixedWindowThrottle,
  memoryThrottles,
  StateUnavailableError,
  type Throttle,
  type ThrottleDecision,
  type ThrottleFactory,
  type ThrottleSpec,
  UnavailableError,
} from '@mcp-identity/common';
import type { GatewayConfig } from './config.js';

/**
 * Where `mcp-ratelimit` counts, so that a limit means what it says whatever process or
 * instance serves a call (docs/deploy.md):
 * - with `ratelimit.redis_url`, in one Redis that every process of every instance shares;
 * - else, with `--workers`, in the primary process, which its workers ask over the IPC channel;
 * - else in the process itself (synchronously: the fast path stays free of promises).
 * A counter that cannot answer refuses the call (the policy answers 503): a limit an attacker
 * could lift by slowing the store down would be no limit.
 */

/** A worker's question to its primary. */
export type CounterRequest =
  | { type: 'counter'; op: 'reserve'; id: number; spec: ThrottleSpec; key: string }
  | { type: 'counter'; op: 'release' | 'reset'; spec: ThrottleSpec; key: string };
/** The primary's answer to a `reserve`. */
export interface CounterAnswer {
  type: 'counted';
  id: number;
  decision: ThrottleDecision;
}

/**
 * How long a worker waits for its primary's answer. The primary answers from memory within
 * microseconds; one that has not answered in a second is stuck, and the call is refused.
 */
export const PRIMARY_ANSWER_TIMEOUT_MS = 1_000;
/** Counters the primary keeps: one per proxy, rule and limit, so this bounds only stale ones. */
const MAX_PRIMARY_COUNTERS = 10_000;
const REDIS_PREFIX = 'mcp-gateway:ratelimit:';

/** The primary's side: every worker's counters, in the primary's memory. */
export class PrimaryCounters {
  private readonly throttles = new Map<string, FixedWindowThrottle>();

  constructor(private readonly clock: () => number) {}

  /** Applies a worker's request; the answer to send back, for a `reserve`. */
  handle(request: CounterRequest): CounterAnswer | undefined {
    const throttle = this.throttleFor(request.spec);
    if (request.op === 'reserve') {
      return { type: 'counted', id: request.id, decision: throttle.reserve(request.key) };
    }
    throttle[request.op](request.key);
    return undefined;
  }

  private throttleFor({ name, limit, windowMs }: ThrottleSpec): FixedWindowThrottle {
    const id = `${limit}/${windowMs}/${name}`;
    let throttle = this.throttles.get(id);
    if (!throttle) {
      throttle = new FixedWindowThrottle({ limit, windowMs, clock: this.clock });
      addBounded(this.throttles, id, throttle, MAX_PRIMARY_COUNTERS);
    }
    return throttle;
  }
}

/** A worker's side: throttles that count in the primary. */
export class CountersInPrimary {
  private nextId = 0;
  private readonly pending = new Map<number, (decision: ThrottleDecision) => void>();

  constructor(
    private readonly send: (request: CounterRequest) => void,
    private readonly timeoutMs = PRIMARY_ANSWER_TIMEOUT_MS,
  ) {}

  readonly factory: ThrottleFactory = (spec) => {
    const post = (op: 'release' | 'reset', key: string) => {
      this.send({ type: 'counter', op, spec, key });
    };
    const throttle: Throttle = {
      reserve: (key) => this.reserve(spec, key),
      release: (key) => post('release', key),
      reset: (key) => post('reset', key),
    };
    return throttle;
  };

  /** Settles the `reserve` the primary answered (a late answer finds nothing to settle). */
  answer(message: CounterAnswer): void {
    this.pending.get(message.id)?.(message.decision);
  }

  private reserve(spec: ThrottleSpec, key: string): Promise<ThrottleDecision> {
    this.nextId = (this.nextId + 1) % Number.MAX_SAFE_INTEGER;
    const id = this.nextId;
    return new Promise<ThrottleDecision>((resolve, reject) => {
      // A late answer still counted the call at the primary: an outage errs on the side of
      // counting, never of letting a call through uncounted.
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new StateUnavailableError('the primary process did not answer in time'));
      }, this.timeoutMs);
      this.pending.set(id, (decision) => {
        clearTimeout(timer);
        this.pending.delete(id);
        resolve(decision);
      });
      try {
        this.send({ type: 'counter', op: 'reserve', id, spec, key });
      } catch (error) {
        clearTimeout(timer);
        this.pending.delete(id);
        reject(new StateUnavailableError(error));
      }
    });
  }
}

export interface RateLimitCounters {
  factory: ThrottleFactory;
  close(): void;
}

/**
 * The counters of one data-plane process: Redis when configured (connected before the
 * process serves: exit 1 naming the host when it cannot be reached), else `local`.
 */
export async function openRateLimitCounters(
  config: GatewayConfig,
  local: ThrottleFactory | undefined,
  clock: () => number,
): Promise<RateLimitCounters> {
  const url = config.rateLimit.redisUrl;
  if (url === undefined) return { factory: local ?? memoryThrottles(clock), close: () => {} };
  const redis = createRedisThrottles(url, REDIS_PREFIX);
  try {
    await redis.ready();
  } catch (error) {
    redis.close();
    throw new UnavailableError(
      `cannot reach the rate-limit store (Redis at ${new URL(url).host})`,
      {
        cause: error,
      },
    );
  }
  return redis;
}
