/**
 * Counts failed logins per key (an e-mail, an IP) in a fixed window. Once a key reaches the
 * limit, further attempts are refused without checking the password until the window ends.
 * Expired windows are swept lazily, so memory is bounded by the keys seen in one window.
 */
export class FailureThrottle {
  readonly #windows = new Map<string, { failures: number; resetAt: number }>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly clock: () => number,
  ) {}

  /** Seconds until `key` may try again, or 0 when it may try now. */
  blockedFor(key: string): number {
    const window = this.#live(key);
    if (window === undefined || window.failures < this.limit) return 0;
    return Math.max(1, Math.ceil((window.resetAt - this.clock()) / 1000));
  }

  fail(key: string): void {
    const window = this.#live(key);
    if (window === undefined) {
      this.#windows.set(key, { failures: 1, resetAt: this.clock() + this.windowMs });
    } else {
      window.failures += 1;
    }
  }

  succeed(key: string): void {
    this.#windows.delete(key);
  }

  #live(key: string): { failures: number; resetAt: number } | undefined {
    const now = this.clock();
    if (this.#windows.size >= 1024) {
      for (const [k, w] of this.#windows) if (w.resetAt <= now) this.#windows.delete(k);
    }
    const window = this.#windows.get(key);
    return window !== undefined && window.resetAt > now ? window : undefined;
  }
}
