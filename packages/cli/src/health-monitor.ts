import { setTimeout as delay } from 'node:timers/promises';
import { Agent } from 'undici';
import { checkHealth } from './health-check.js';

export interface HealthPolicy {
  /** Time between two checks of a running service; a check waits at most this long for its answer. */
  intervalMs: number;
  /** A running service whose checks have all failed for this long is replaced. */
  unhealthyAfterMs: number;
}

/** Since when a service's health checks fail, and why the latest one did. */
export interface HealthFailure {
  since: number;
  problem: string;
}

export interface HealthWatch {
  /** Stops checking; resolves once no check is in flight. */
  stop(): Promise<void>;
}

/**
 * Checks a running service's health URL every interval. `changed` hears each
 * change of the failure (first failure, a new problem, recovery: undefined);
 * `unhealthy` hears once that the checks kept failing for `unhealthyAfterMs`,
 * and the watch ends there. A check that gets no answer within the interval is
 * a failure: that is how a hung (e.g. SIGSTOPped) process looks from outside.
 */
export function watchHealth(
  url: string,
  options: {
    policy: HealthPolicy;
    ca?: string;
    changed(failure: HealthFailure | undefined): void;
    unhealthy(failure: HealthFailure): void;
  },
): HealthWatch {
  const { policy } = options;
  const dispatcher = new Agent({ connect: options.ca ? { ca: options.ca } : {} });
  const stopped = new AbortController();
  const { signal } = stopped;
  let failure: HealthFailure | undefined;
  const loop = (async () => {
    let next = Date.now() + policy.intervalMs;
    while (!signal.aborted) {
      await delay(Math.max(0, next - Date.now()), undefined, { signal }).catch(() => undefined);
      if (signal.aborted) break;
      const checkedAt = Date.now();
      next = checkedAt + policy.intervalMs;
      const problem = await checkHealth(url, { dispatcher, timeoutMs: policy.intervalMs, signal });
      if (signal.aborted) break;
      if (problem === undefined) {
        if (failure) {
          failure = undefined;
          options.changed(undefined);
        }
        continue;
      }
      if (failure?.problem !== problem) {
        failure = { since: failure?.since ?? checkedAt, problem };
        options.changed(failure);
      }
      if (Date.now() - failure.since >= policy.unhealthyAfterMs) {
        options.unhealthy(failure);
        break;
      }
    }
  })();
  return {
    async stop() {
      stopped.abort();
      await loop;
      await dispatcher.close();
    },
  };
}
