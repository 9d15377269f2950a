import { StartupError } from '@mcp-identity/common';
import { Agent } from 'undici';
import { checkHealth } from './health-check.js';

export interface HealthWaitOptions {
  /** Give up after this long. */
  timeoutMs: number;
  /** Trust this PEM certificate (a service's self-signed one) for https URLs. */
  ca?: string;
  /** Stop waiting early, e.g. because the process exited. */
  signal?: AbortSignal;
}

/**
 * Polls a health URL until it answers 2xx. Polling backs off from 50 ms to
 * 500 ms: services take from a fraction of a second to several seconds to start.
 */
export async function waitForHealthy(url: string, options: HealthWaitOptions): Promise<void> {
  const dispatcher = new Agent({ connect: options.ca ? { ca: options.ca } : {} });
  const deadline = Date.now() + options.timeoutMs;
  let delay = 50;
  let lastProblem = 'no answer yet';
  try {
    while (Date.now() < deadline) {
      options.signal?.throwIfAborted();
      const problem = await checkHealth(url, { dispatcher, timeoutMs: 2000 });
      if (problem === undefined) return;
      lastProblem = problem;
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 500);
    }
    throw new StartupError(
      `${url} not healthy after ${options.timeoutMs / 1000} s (${lastProblem})`,
    );
  } finally {
    await dispatcher.close();
  }
}
