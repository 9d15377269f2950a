import type { Clock } from './clock.js';

/**
 * Counts events per key in a fixed window. Used for registration and token request limits
 * and for login throttling. Windows are dropped lazily so the map stays bounded by the
 * number of keys seen within one window.
 */
export class WindowCounter {
  readonly #windows = new Map<string, { count: number; resetAt: number }>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly clock: Clock,
  ) {}

  /** Whether `key` has reached the limit in its current window. */
  isExceeded(key: string): boolean {
    return this.#current(key).count >= this.limit;
  }

  /** Records one event; returns false when the key was already at its limit. */
  hit(key: string): boolean {
    const window = this.#current(key);
    if (window.count >= this.limit) return false;
    window.count += 1;
    return true;
  }

  reset(key: string): void {
    this.#windows.delete(key);
  }

  /** Seconds until the key's window ends (for Retry-After). */
  retryAfterSeconds(key: string): number {
    return Math.max(1, Math.ceil((this.#current(key).resetAt - this.clock()) / 1000));
  }

  #current(key: string): { count: number; resetAt: number } {
    const now = this.clock();
    this.#sweep(now);
    let window = this.#windows.get(key);
    if (window === undefined || window.resetAt <= now) {
      window = { count: 0, resetAt: now + this.windowMs };
      this.#windows.set(key, window);
    }
    return window;
  }

  #sweep(now: number): void {
    if (this.#windows.size < 1024) return;
    for (const [key, window] of this.#windows) if (window.resetAt <= now) this.#windows.delete(key);
  }
}
