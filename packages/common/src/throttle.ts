import { clientNetwork } from './client-address.js';
import { type Clock, systemClock } from './clock.js';
import { InvalidArgumentError } from './errors.js';
import { addBounded } from './memo.js';

/** The answer of `Throttle.reserve`. */
export type ThrottleDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/**
 * A per-key attempt counter with reserve-before-check semantics, in process memory
 * (`FixedWindowThrottle`) or shared by every instance (`RedisThrottle`). Callers await every
 * method: a shared counter answers asynchronously.
 */
export interface Throttle {
  /** Counts one attempt for `key`, or refuses it (without counting) when the window is full. */
  reserve(key: string): ThrottleDecision | Promise<ThrottleDecision>;
  /** Gives back one attempt reserved in the current window (one that turned out not to count). */
  release(key: string): void | Promise<void>;
  /** Forgets every attempt of `key`. */
  reset(key: string): void | Promise<void>;
}

/** What a throttle counts: `name` tells counters of different purposes apart. */
export interface ThrottleSpec {
  name: string;
  limit: number;
  windowMs: number;
}

/** Makes the throttles of a component, so a host can choose where they count. */
export type ThrottleFactory = (spec: ThrottleSpec) => Throttle;

export interface FixedWindowThrottleOptions {
  /** Attempts a key may reserve per window. */
  limit: number;
  /** Length of a window in milliseconds; a key's window starts with its first attempt. */
  windowMs: number;
  /** Injectable so tests need no sleeping. Default `systemClock`. */
  clock?: Clock;
  /**
   * Keys tracked at once. When every tracked window is still open, the oldest window is
   * forgotten to make room, so memory stays bounded whatever an attacker sends. Default 100 000.
   */
  maxKeys?: number;
}

interface Window {
  count: number;
  resetAt: number;
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new InvalidArgumentError(`FixedWindowThrottle: ${name} must be a positive integer`);
  }
  return value;
}

/**
 * Per-key fixed-window attempt counter. `reserve` counts the attempt before the caller runs
 * the check it guards (a password hash, a registration), so N concurrent attempts can never
 * all pass a limit smaller than N; a caller whose attempt should not count (a successful
 * login) gives it back with `release` or clears the key with `reset`.
 */
export class FixedWindowThrottle implements Throttle {
  readonly #windows = new Map<string, Window>();
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #clock: Clock;
  readonly #maxKeys: number;

  constructor(options: FixedWindowThrottleOptions) {
    this.#limit = positiveInteger('limit', options.limit);
    this.#windowMs = positiveInteger('windowMs', options.windowMs);
    this.#maxKeys = positiveInteger('maxKeys', options.maxKeys ?? 100_000);
    this.#clock = options.clock ?? systemClock;
  }

  /** Counts one attempt for `key`, or refuses it (without counting) when the window is full. */
  reserve(key: string): ThrottleDecision {
    const now = this.#clock();
    const window = this.#open(key, now);
    if (window.count >= this.#limit) {
      return {
        allowed: false,
        retryAfterSeconds: Math.max(1, Math.ceil((window.resetAt - now) / 1000)),
      };
    }
    window.count += 1;
    return { allowed: true };
  }

  /** Gives back one attempt reserved in the current window (one that turned out not to count). */
  release(key: string): void {
    const window = this.#windows.get(key);
    if (window !== undefined && window.resetAt > this.#clock() && window.count > 0) {
      window.count -= 1;
    }
  }

  /** Forgets every attempt of `key`. */
  reset(key: string): void {
    this.#windows.delete(key);
  }

  /** Keys currently tracked (for tests and metrics). */
  get size(): number {
    return this.#windows.size;
  }

  #open(key: string, now: number): Window {
    this.#sweep(now);
    const existing = this.#windows.get(key);
    if (existing !== undefined) return existing;
    const window = { count: 0, resetAt: now + this.#windowMs };
    addBounded(this.#windows, key, window, this.#maxKeys);
    return window;
  }

  /**
   * Windows all have the same length and are inserted when they open, so the map's order is
   * the order in which they close: expired ones are at the front.
   */
  #sweep(now: number): void {
    for (const [key, window] of this.#windows) {
      if (window.resetAt > now) return;
      this.#windows.delete(key);
    }
  }
}

/**
 * Reserves one attempt in each throttle (for instance per account and per client IP), all or
 * nothing: when one refuses, the attempts already taken are given back and its refusal is
 * returned.
 */
export function reserveAll(
  reservations: ReadonlyArray<readonly [throttle: FixedWindowThrottle, key: string]>,
): ThrottleDecision {
  const taken: Array<readonly [FixedWindowThrottle, string]> = [];
  for (const [throttle, key] of reservations) {
    const decision = throttle.reserve(key);
    if (!decision.allowed) {
      for (const [t, k] of taken) t.release(k);
      return decision;
    }
    taken.push([throttle, key]);
  }
  return { allowed: true };
}

/** `reserveAll` for throttles of any kind, shared ones included. */
export async function reserveEach(
  reservations: ReadonlyArray<readonly [throttle: Throttle, key: string]>,
): Promise<ThrottleDecision> {
  const taken: Array<readonly [Throttle, string]> = [];
  for (const [throttle, key] of reservations) {
    const decision = await throttle.reserve(key);
    if (!decision.allowed) {
      await Promise.all(taken.map(([t, k]) => t.release(k)));
      return decision;
    }
    taken.push([throttle, key]);
  }
  return { allowed: true };
}

/**
 * Counts one attempt from the client at `ip` against its address and against its network, or
 * refuses it: one host cannot get past a per-address limit by using many addresses of one
 * network (see `clientNetwork`).
 */
export function reserveForAddress(
  ip: string,
  perIp: Throttle,
  perNetwork: Throttle,
): Promise<ThrottleDecision> {
  return reserveEach([
    [perIp, ip],
    [perNetwork, clientNetwork(ip)],
  ]);
}

/** The default factory: counters in process memory. */
export function memoryThrottles(clock?: Clock): ThrottleFactory {
  return ({ limit, windowMs }) => new FixedWindowThrottle({ limit, windowMs, clock });
}
