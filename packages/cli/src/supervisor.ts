import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, mkdirSync, readFileSync, type WriteStream } from 'node:fs';
import { dirname } from 'node:path';
import { waitForHealthy } from './health-wait.js';

export interface ServiceSpec {
  /** Short name used in progress lines and as the log file's name. */
  name: string;
  command: string;
  args: string[];
  env?: Record<string, string | undefined>;
  /** Where the service's stdout and stderr go. */
  logFile: string;
  healthUrl: string;
  /** PEM certificate to trust when the health URL is https. */
  ca?: string | (() => string | undefined);
  startTimeoutMs?: number;
}

export interface RunningService {
  readonly spec: ServiceSpec;
  readonly pid: number | undefined;
  /** SIGTERM, then SIGKILL after the grace period; resolves when the process has exited. */
  stop(graceMs?: number): Promise<void>;
  /** Resolves with the exit code when the process exits for any reason. */
  readonly exited: Promise<number | null>;
}

/**
 * Starts each service as its own process (so each can be restarted, or run
 * elsewhere), waits for its health URL, and stops them in reverse order.
 */
export class Supervisor {
  private readonly running: RunningService[] = [];

  async start(spec: ServiceSpec): Promise<RunningService> {
    mkdirSync(dirname(spec.logFile), { recursive: true });
    const log = createWriteStream(spec.logFile, { flags: 'a' });
    await once(log, 'open');
    const child = spawn(spec.command, spec.args, {
      env: { ...process.env, ...spec.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.pipe(log, { end: false });
    child.stderr?.pipe(log, { end: false });
    const service = trackService(spec, child, log);
    this.running.push(service);

    const early = new AbortController();
    void service.exited.then(() => early.abort());
    try {
      await waitForHealthy(spec.healthUrl, {
        timeoutMs: spec.startTimeoutMs ?? 60_000,
        ca: typeof spec.ca === 'function' ? spec.ca() : spec.ca,
        signal: early.signal,
      });
    } catch (error) {
      const code = early.signal.aborted ? await service.exited : undefined;
      const why =
        code === undefined ? (error as Error).message : `the process exited with code ${code}`;
      // A service that never became healthy is not left running behind the caller's back.
      this.running.splice(this.running.indexOf(service), 1);
      await service.stop();
      throw new Error(`${spec.name} did not start: ${why}\n${tailOf(spec.logFile)}`);
    }
    return service;
  }

  /** Stops every started service, last started first. */
  async stopAll(graceMs = 10_000): Promise<void> {
    while (this.running.length > 0) await this.running.pop()?.stop(graceMs);
  }
}

function trackService(spec: ServiceSpec, child: ChildProcess, log: WriteStream): RunningService {
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code, signal) => {
      log.end();
      resolve(code ?? (signal ? null : 0));
    });
  });
  return {
    spec,
    pid: child.pid,
    exited,
    async stop(graceMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The last lines of a log, indented, for start-up failure messages. */
function tailOf(logFile: string, lines = 15): string {
  try {
    const text = readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-lines);
    return [`  last lines of ${logFile}:`, ...text.map((line) => `    ${line}`)].join('\n');
  } catch {
    return `  (no log at ${logFile})`;
  }
}
