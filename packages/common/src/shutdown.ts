import type { FastifyBaseLogger } from 'fastify';
import { exitOnceLogged } from './batched-stdout.js';

type Closer = () => Promise<void>;

const closers = new Set<Closer>();
/** Run once every other closer has finished (exporting what the last requests recorded). */
const lastClosers = new Set<Closer>();
let installed = false;

/**
 * Registers work to finish before the process exits on SIGINT/SIGTERM; `last` once the other
 * closers (the servers, whose final requests are still being answered) have finished.
 */
export function onShutdown(close: Closer, options: { last?: boolean } = {}): () => void {
  const set = options.last ? lastClosers : closers;
  set.add(close);
  return () => {
    set.delete(close);
  };
}

export interface SignalOptions {
  logger?: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;
  /** How long in-flight work may take before the process exits anyway. */
  graceMs?: number;
}

/**
 * On the first SIGINT or SIGTERM, runs every registered closer (servers stop
 * accepting, in-flight requests finish), waits for the batched log to reach standard output,
 * and exits 0; exits 1 if that takes longer than the grace period. A second signal exits at
 * once.
 */
export function installSignalHandlers(options: SignalOptions = {}): void {
  if (installed) return;
  installed = true;
  let stopping = false;
  const handle = (signal: NodeJS.Signals) => {
    if (stopping) {
      options.logger?.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    options.logger?.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      options.logger?.error('shutdown grace period elapsed: exiting');
      process.exit(1);
    }, options.graceMs ?? 10_000);
    timer.unref();
    // The log goes last: closing servers writes the final requests' lines.
    void Promise.allSettled([...closers].map((close) => close()))
      .then(() => Promise.allSettled([...lastClosers].map((close) => close())))
      .then(() => exitOnceLogged(0));
  };
  process.on('SIGINT', handle);
  process.on('SIGTERM', handle);
}
