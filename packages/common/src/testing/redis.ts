import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NotFoundError } from '../errors.js';
import { findExecutable } from './executables.js';
import { onFreePort, type ServiceProcess, startServiceProcess } from './service-process.js';

/** Why a throwaway Redis cannot be started here, or undefined when it can. */
export function redisMissing(): string | undefined {
  return findExecutable('redis-server')
    ? undefined
    : "redis-server not found (install Debian's redis-server)";
}

export interface TestRedis {
  /** `redis://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** Stops the server (its data is not persisted, as for a cache that restarts empty). */
  stop(): Promise<void>;
  /** Starts a stopped server again on the same port. */
  start(): Promise<void>;
  /** Stops the server and removes its directory. */
  close(): Promise<void>;
}

/** A throwaway Redis on an ephemeral loopback port, without persistence. */
export async function startRedis(): Promise<TestRedis> {
  const binary = findExecutable('redis-server');
  if (!binary) throw new NotFoundError(redisMissing());
  const dir = mkdtempSync(join(tmpdir(), 'mcp-identity-redis-'));
  let server: ServiceProcess | undefined;
  const launch = (port: number) =>
    startServiceProcess({
      name: 'redis-server',
      command: binary,
      args: [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        'no',
        '--daemonize',
        'no',
      ],
      ready: /Ready to accept connections/,
    });
  const port = await onFreePort(async (candidate) => {
    server = await launch(candidate);
    return candidate;
  });
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async stop() {
      await server?.stop();
      server = undefined;
    },
    async start() {
      if (server) return;
      server = await launch(port);
    },
    async close() {
      await server?.stop();
      server = undefined;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
