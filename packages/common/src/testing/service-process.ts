import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { StartupError } from '../errors.js';

export interface ServiceProcessOptions {
  /** Used in error messages. */
  name: string;
  command: string;
  args: string[];
  /** Started once this appears in the process's stdout or stderr. */
  ready: RegExp;
  /** Run as this user and group (a service that refuses root, such as PostgreSQL). */
  uid?: number;
  gid?: number;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}

export interface ServiceProcess {
  pid: number;
  /** The last 64 KiB of the process's output, for diagnostics. */
  output(): string;
  /** Sends `signal` (default SIGTERM), then SIGKILL after 10 s; resolves once it has exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

const OUTPUT_LIMIT = 64 * 1024;
const running = new Set<ChildProcess>();
let exitHookInstalled = false;

// A test run that dies early must not leave database or proxy servers behind.
function killLeftoversOnExit(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of running) child.kill('SIGKILL');
  });
}

/** Starts a long-running server process and resolves once its output says it is ready. */
export function startServiceProcess(options: ServiceProcessOptions): Promise<ServiceProcess> {
  killLeftoversOnExit();
  const child = spawn(options.command, options.args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: options.env ?? process.env,
    ...(options.uid === undefined ? {} : { uid: options.uid }),
    ...(options.gid === undefined ? {} : { gid: options.gid }),
  });
  running.add(child);
  let output = '';
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      running.delete(child);
      resolve();
    });
  });
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(kill);
  };
  const handle: ServiceProcess = { pid: child.pid ?? -1, output: () => output, stop };
  return new Promise<ServiceProcess>((resolve, reject) => {
    let settled = false;
    const settle = (error?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error) void stop('SIGKILL').then(() => reject(error));
      else resolve(handle);
    };
    const timer = setTimeout(
      () => settle(new StartupError(`${options.name} did not start in time:\n${output}`)),
      options.timeoutMs ?? 30_000,
    );
    const onData = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-OUTPUT_LIMIT);
      if (options.ready.test(output)) settle();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('error', (error) =>
      settle(new StartupError(`${options.name}: ${error.message}`, { cause: error })),
    );
    child.once('exit', (code, signal) =>
      settle(
        new StartupError(
          `${options.name} exited (${signal ?? code}) before it was ready:\n${output}`,
        ),
      ),
    );
  });
}

/**
 * A TCP port that was free a moment ago on 127.0.0.1, for servers that cannot bind port 0 and
 * report it (PostgreSQL, Redis, nginx). Callers retry on the rare collision.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address
          ? resolve(address.port)
          : reject(new StartupError('no port')),
      );
    });
  });
}

/** Runs `start` on fresh free ports until one is not taken by someone else in the meantime. */
export async function onFreePort<T>(start: (port: number) => Promise<T>): Promise<T> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt += 1) {
    try {
      return await start(await freePort());
    } catch (error) {
      lastError = error;
      if (!/address already in use|could not create any TCP\/IP sockets/i.test(String(error)))
        throw error;
    }
  }
  throw lastError;
}
