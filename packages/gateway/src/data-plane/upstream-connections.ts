import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';

/** `[limits]` bounds of each proxy's upstream connections and of the queue behind them. */
export interface UpstreamLimits {
  /** Connections a proxy opens to its upstream at most: requests it has in flight at once. */
  connections: number;
  /** Requests that may wait for a connection; one more is refused at once. */
  queueLength: number;
  /** How long a request may wait for a connection before it is refused. */
  queueTimeoutMs: number;
  /** Upstream silence (headers, or between chunks) before giving up. */
  idleTimeoutMs: number;
}

/** A request waiting for a connection. */
export interface Waiting {
  /** A connection is the request's now (`release` it when done): send it. */
  start(): void;
  /** No connection freed in time: answer without the upstream. */
  expire(): void;
}

interface Waiter {
  readonly request: Waiting;
  readonly deadline: number;
}

/**
 * One proxy's connections to its upstream: an undici pool of its own (so the proxies of one
 * upstream never wait for each other's connections) behind a bounded queue. undici's own queue
 * has no bound: a request would wait as long as the slowest answers ahead of it (28 s behind
 * 30 s calls, issue 37). Here at most `connections` requests are in flight; up to `queueLength`
 * more wait in arrival order, each at most `queueTimeoutMs`; past either bound a request is
 * refused without reaching the upstream. All waiters have the same timeout, so their deadlines
 * come in arrival order and one timer, set for the oldest, serves the whole queue.
 */
export class UpstreamConnections {
  readonly pool: Pool;
  /** Seconds a refused client is told to wait (`Retry-After`, RFC 9110 §10.2.3). */
  readonly retryAfterSeconds: string;
  private busy = 0;
  /** In arrival order (a Set iterates in insertion order and deletes in O(1)). */
  private readonly waiting = new Set<Waiter>();
  private timer: NodeJS.Timeout | undefined = undefined;
  private drained: (() => void) | undefined = undefined;

  constructor(
    origin: string,
    private readonly limits: UpstreamLimits,
  ) {
    this.pool = new Pool(origin, {
      connections: limits.connections,
      keepAliveTimeout: 30_000,
      headersTimeout: limits.idleTimeoutMs,
      bodyTimeout: limits.idleTimeoutMs,
    });
    // A refusal means every connection stayed busy for as long as a request may wait: asking
    // back sooner would most likely meet the same queue.
    this.retryAfterSeconds = String(Math.max(1, Math.ceil(limits.queueTimeoutMs / 1000)));
  }

  /** Requests holding a connection now. */
  get inFlight(): number {
    return this.busy;
  }

  /** Requests waiting for a connection now. */
  get queued(): number {
    return this.waiting.size;
  }

  /** Takes a connection for a request sent now; false when every one is in use. */
  acquire(): boolean {
    if (this.busy >= this.limits.connections) return false;
    this.busy += 1;
    return true;
  }

  /**
   * Queues a request `acquire` refused. Returns the function that withdraws it (its client went
   * away), or undefined when the queue is full (the request is not queued).
   */
  enqueue(request: Waiting): (() => void) | undefined {
    if (this.waiting.size >= this.limits.queueLength || this.drained) return undefined;
    const waiter: Waiter = { request, deadline: performance.now() + this.limits.queueTimeoutMs };
    this.waiting.add(waiter);
    this.timer ??= setTimeout(this.expireDue, this.limits.queueTimeoutMs);
    return () => {
      this.waiting.delete(waiter);
      this.checkDrained();
    };
  }

  /** A request that held a connection is over: the connection goes to the oldest waiter. */
  release(): void {
    // The usual case first: no waiter, and no iterator made for an empty queue.
    const oldest = this.waiting.size === 0 ? undefined : this.waiting.values().next().value;
    if (oldest === undefined) {
      this.busy -= 1;
      return;
    }
    this.waiting.delete(oldest);
    this.checkDrained();
    oldest.request.start();
  }

  private readonly expireDue = () => {
    this.timer = undefined;
    const now = performance.now();
    for (const waiter of this.waiting) {
      if (waiter.deadline > now) {
        this.timer = setTimeout(this.expireDue, waiter.deadline - now);
        return;
      }
      this.waiting.delete(waiter);
      waiter.request.expire();
    }
    this.checkDrained();
  };

  /**
   * Stops taking requests (the proxy was changed or removed): those already waiting are still
   * sent, then the pool closes once its requests in flight are over.
   */
  close(): Promise<void> {
    const drained = new Promise<void>((resolve) => {
      this.drained = resolve;
    });
    this.checkDrained();
    return drained.then(() => this.pool.close());
  }

  /** Drops the waiting requests (their clients are gone: the server is shutting down). */
  destroy(): Promise<void> {
    clearTimeout(this.timer);
    this.waiting.clear();
    return this.pool.destroy();
  }

  private checkDrained(): void {
    if (this.drained === undefined || this.waiting.size > 0) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.drained();
  }
}
