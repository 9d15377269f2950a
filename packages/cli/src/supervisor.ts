import { type ChildProcess, spawn } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { StartupError } from '@mcp-identity/common';
import {
  type HealthFailure,
  type HealthPolicy,
  type HealthWatch,
  watchHealth,
} from './health-monitor.js';
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

export type ServiceState = 'starting' | 'running' | 'restarting' | 'stopped' | 'failed';

/** What `mcp-identity status` shows of one service. */
export interface ServiceStatus {
  name: string;
  state: ServiceState;
  pid: number | undefined;
  /** How many times the supervisor started the service again (after it exited or hung). */
  restarts: number;
  lastExit?: { code: number | null; signal: string | null; at: string };
  /**
   * Why the last restart happened: the process exited, or it was killed as
   * unhealthy; `detail` says it in words ("exited (SIGKILL)", "unhealthy for 30 s (…)").
   */
  lastRestart?: { reason: 'exited' | 'unhealthy'; detail: string; at: string };
  /** Present while the running process fails its health checks: since when, and why. */
  unhealthy?: { since: string; problem: string };
}

export interface RestartPolicy {
  /** Delay before the first restart; it doubles with each restart that follows quickly. */
  initialDelayMs: number;
  maxDelayMs: number;
  /** A run this long resets the delay to `initialDelayMs`. */
  stableAfterMs: number;
  /** Consecutive failed start-ups (exit or no health) after which the supervisor gives up. */
  maxStartFailures: number;
}

const DEFAULT_POLICY: RestartPolicy = {
  initialDelayMs: 250,
  maxDelayMs: 10_000,
  stableAfterMs: 30_000,
  maxStartFailures: 5,
};

const DEFAULT_HEALTH: HealthPolicy = { intervalMs: 5_000, unhealthyAfterMs: 30_000 };

export interface RunningService {
  readonly spec: ServiceSpec;
  /** The current process's id (it changes with each restart). */
  readonly pid: number | undefined;
  readonly status: ServiceStatus;
  /** SIGTERM, then SIGKILL after the grace period; no restart follows. */
  stop(graceMs?: number): Promise<void>;
  /**
   * Resolves with the last process's exit code once the service is down for
   * good: stopped, or given up after repeated failed start-ups.
   */
  readonly exited: Promise<number | null>;
}

export interface SupervisorOptions {
  restart?: Partial<RestartPolicy>;
  /** How a running service is checked; one failing for `unhealthyAfterMs` is restarted. */
  health?: Partial<HealthPolicy>;
  /** Restarts and give-ups are reported here, one line each. */
  log?: (line: string) => void;
}

interface SupervisorEvents {
  change: [ServiceStatus];
  'gave-up': [ServiceStatus];
}

/**
 * Starts each service as its own process, waits for its health URL, restarts
 * a service that exits or whose health URL keeps failing (with backoff, logged
 * and counted) and stops them in reverse order. A service that fails its first
 * start fails `start`; one that later keeps failing to start again is given up
 * (`gave-up`), which callers treat as the stack failing.
 */
export class Supervisor extends EventEmitter<SupervisorEvents> {
  private readonly running: ManagedService[] = [];
  private readonly policy: RestartPolicy;
  /** How running services are checked (recorded in the stack's state file). */
  readonly health: HealthPolicy;
  private readonly log: (line: string) => void;

  constructor(options: SupervisorOptions = {}) {
    super();
    this.policy = { ...DEFAULT_POLICY, ...options.restart };
    this.health = { ...DEFAULT_HEALTH, ...options.health };
    this.log = options.log ?? (() => undefined);
  }

  async start(spec: ServiceSpec): Promise<RunningService> {
    const service = new ManagedService(spec, this.policy, this.health, this.log, (status) => {
      this.emit('change', status);
      if (status.state === 'failed') this.emit('gave-up', status);
    });
    this.running.push(service);
    try {
      await service.launch();
    } catch (error) {
      // A service that never became healthy is not left running behind the caller's back.
      this.running.splice(this.running.indexOf(service), 1);
      await service.stop();
      throw error;
    }
    return service;
  }

  statuses(): ServiceStatus[] {
    return this.running.map((service) => service.status);
  }

  /** Stops every started service, last started first. */
  async stopAll(graceMs = 10_000): Promise<void> {
    while (this.running.length > 0) await this.running.pop()?.stop(graceMs);
  }
}

class ManagedService implements RunningService {
  private child: ChildProcess | undefined;
  private state: ServiceState = 'starting';
  private restarts = 0;
  private lastExit: ServiceStatus['lastExit'];
  private lastRestart: ServiceStatus['lastRestart'];
  private healthWatch: HealthWatch | undefined;
  private failure: HealthFailure | undefined;
  /** Set when the supervisor killed the process as unhealthy: the restart's reason. */
  private killedAsUnhealthy: string | undefined;
  private stopping = false;
  private quickRestarts = 0;
  private startFailures = 0;
  private readySince = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private finish!: (code: number | null) => void;
  readonly exited = new Promise<number | null>((resolve) => {
    this.finish = resolve;
  });

  constructor(
    readonly spec: ServiceSpec,
    private readonly policy: RestartPolicy,
    private readonly health: HealthPolicy,
    private readonly log: (line: string) => void,
    private readonly changed: (status: ServiceStatus) => void,
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get status(): ServiceStatus {
    return {
      name: this.spec.name,
      state: this.state,
      pid: this.state === 'stopped' || this.state === 'failed' ? undefined : this.pid,
      restarts: this.restarts,
      ...(this.lastExit ? { lastExit: this.lastExit } : {}),
      ...(this.lastRestart ? { lastRestart: this.lastRestart } : {}),
      ...(this.failure
        ? {
            unhealthy: {
              since: new Date(this.failure.since).toISOString(),
              problem: this.failure.problem,
            },
          }
        : {}),
    };
  }

  private setState(state: ServiceState): void {
    this.state = state;
    this.changed(this.status);
  }

  /** Spawns the process and waits for its health; throws with the end of its log if it fails. */
  async launch(): Promise<void> {
    const { spec } = this;
    mkdirSync(dirname(spec.logFile), { recursive: true });
    const log = createWriteStream(spec.logFile, { flags: 'a' });
    await once(log, 'open');
    // Its own process group, so a terminal's Ctrl-C reaches only the supervisor,
    // which stops the services in order; the IPC channel lets a service see its
    // supervisor die (see parent-watch.ts).
    const child = spawn(spec.command, spec.args, {
      env: { ...process.env, ...spec.env },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      detached: true,
    });
    this.child = child;
    child.stdout?.pipe(log, { end: false });
    child.stderr?.pipe(log, { end: false });
    const exited = new Promise<number | null>((resolve) => {
      child.once('exit', (code, signal) => {
        log.end();
        this.lastExit = { code, signal, at: new Date().toISOString() };
        resolve(code);
        this.onExit(child, code, signal);
      });
    });
    this.changed(this.status);

    const early = new AbortController();
    void exited.then(() => early.abort());
    try {
      await waitForHealthy(spec.healthUrl, {
        timeoutMs: spec.startTimeoutMs ?? 60_000,
        ca: this.ca(),
        signal: early.signal,
      });
    } catch (error) {
      const why = early.signal.aborted
        ? `the process exited with code ${await exited}`
        : (error as Error).message;
      throw new StartupError(`${spec.name} did not start: ${why}\n${tailOf(spec.logFile)}`);
    }
    this.readySince = Date.now();
    this.startFailures = 0;
    this.setState('running');
    this.watchHealth(child);
  }

  private ca(): string | undefined {
    return typeof this.spec.ca === 'function' ? this.spec.ca() : this.spec.ca;
  }

  /**
   * A running process whose health URL keeps failing is hung (SIGSTOP, a
   * deadlock, a busy loop) or broken: it is killed and restarted like one that
   * crashed. SIGKILL, to its whole process group: a stopped process does not
   * act on SIGTERM until it is continued, and the gateway's workers share the
   * group.
   */
  private watchHealth(child: ChildProcess): void {
    this.healthWatch = watchHealth(this.spec.healthUrl, {
      policy: this.health,
      ca: this.ca(),
      changed: (failure) => {
        this.failure = failure;
        this.changed(this.status);
      },
      unhealthy: (failure) => {
        if (child !== this.child || this.stopping || child.pid === undefined) return;
        const seconds = Math.round((Date.now() - failure.since) / 1000);
        this.killedAsUnhealthy = `unhealthy for ${seconds} s (${failure.problem})`;
        this.log(`${this.spec.name} ${this.killedAsUnhealthy}: killing pid ${child.pid} (SIGKILL)`);
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // Already gone: its exit restarts it all the same.
        }
      },
    });
  }

  private async stopHealthWatch(): Promise<void> {
    const watch = this.healthWatch;
    this.healthWatch = undefined;
    this.failure = undefined;
    await watch?.stop();
  }

  private onExit(child: ChildProcess, code: number | null, signal: string | null): void {
    if (child !== this.child) return;
    void this.stopHealthWatch();
    const unhealthy = this.killedAsUnhealthy;
    this.killedAsUnhealthy = undefined;
    if (this.stopping) {
      this.setState('stopped');
      this.finish(code);
      return;
    }
    // An exit during a start-up is that start-up failing: `launch` reports it.
    if (this.state !== 'running') return;
    const at = new Date().toISOString();
    if (unhealthy) {
      this.lastRestart = { reason: 'unhealthy', detail: unhealthy, at };
    } else {
      this.lastRestart = { reason: 'exited', detail: `exited (${signal ?? `code ${code}`})`, at };
      this.log(`${this.spec.name} ${this.lastRestart.detail}`);
    }
    this.scheduleRestart();
  }

  private scheduleRestart(): void {
    if (this.readySince && Date.now() - this.readySince >= this.policy.stableAfterMs) {
      this.quickRestarts = 0;
    }
    const delay = Math.min(
      this.policy.initialDelayMs * 2 ** this.quickRestarts,
      this.policy.maxDelayMs,
    );
    this.quickRestarts += 1;
    this.readySince = 0;
    this.log(`${this.spec.name}: restart #${this.restarts + 1} in ${delay} ms`);
    this.setState('restarting');
    this.restartTimer = setTimeout(() => void this.restart(), delay);
  }

  private async restart(): Promise<void> {
    this.restartTimer = undefined;
    this.restarts += 1;
    try {
      await this.launch();
      this.log(`${this.spec.name} restarted (pid ${this.pid}, restart #${this.restarts})`);
    } catch (error) {
      if (this.stopping) return;
      this.startFailures += 1;
      this.log((error as Error).message.split('\n')[0] ?? '');
      if (this.startFailures >= this.policy.maxStartFailures) {
        this.log(`${this.spec.name}: ${this.startFailures} failed start-ups in a row, giving up`);
        this.setState('failed');
        this.finish(this.lastExit?.code ?? null);
        return;
      }
      if (this.child?.exitCode === null && this.child.signalCode === null) {
        // Alive but never healthy: replace it.
        await this.kill(this.child, 5_000);
      }
      this.scheduleRestart();
    }
  }

  async stop(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    await this.stopHealthWatch();
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      await this.kill(child, graceMs);
    } else if (this.state !== 'stopped' && this.state !== 'failed') {
      this.setState('stopped');
      this.finish(child?.exitCode ?? null);
    }
  }

  private async kill(child: ChildProcess, graceMs: number): Promise<void> {
    const exit = once(child, 'exit');
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exit;
    clearTimeout(timer);
  }
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
