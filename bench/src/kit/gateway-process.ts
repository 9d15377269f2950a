import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { hashSecret, randomToken } from '@mcp-identity/common';
import type { RunningProcess } from './fast-upstream.js';
import { writeGatewayConfig } from './gateway-config.js';
import { freePort } from './ports.js';

/**
 * The gateway as its own process (`gateway serve`, as deployed), configured from a generated TOML
 * file in a temp directory, listening on ephemeral ports, logging (audit lines included) to a file
 * so the benchmark never spends CPU reading them.
 */
export interface GatewayProcessOptions {
  dir: string;
  keyManager: { name: string; issuer: string; jwksUri: string };
  /** `cachemaxsize`: 0 turns the verified-token cache off (every request verifies a signature). */
  tokenCacheEntries?: number;
  /**
   * `gateway serve --workers N`; unset: `--workers 1`, one process (the gateway's own default is
   * one worker per core, which would skew single-process rows and per-pid measurements).
   */
  workers?: number;
  /** Directory for `node --cpu-prof` output, written when the gateway exits. */
  cpuProfileDir?: string;
  /** More `node` flags, e.g. `--perf-basic-prof`. */
  nodeFlags?: string[];
  /** Another build's `bin.js` (e.g. a copy of an earlier `dist/`), to compare builds in one run. */
  bin?: string;
  /** A command the gateway runs under, e.g. `callgrindCommand(dir)`; it must keep the pid. */
  wrapper?: string[];
  /** Environment variables set for the gateway besides this process's (`OTEL_*`, say). */
  env?: Record<string, string>;
}

export interface GatewayProcess extends RunningProcess {
  plainUrl: string;
  /**
   * Deploys a proxy through the management API and waits until `probe` (a POST to the proxy's
   * path) succeeds on 20 fresh connections in a row: with several workers, every one of them
   * must serve the new proxy before it is measured.
   */
  deploy(
    definition: Record<string, unknown>,
    probe: { path: string; headers: Record<string, string>; body: string },
  ): Promise<void>;
}

/** One POST on a new connection (no keep-alive, so workers sharing a port all get asked). */
function postOnFreshConnection(
  url: string,
  headers: Record<string, string>,
  body: string,
): Promise<number> {
  return new Promise((resolve) => {
    const request = httpRequest(url, { method: 'POST', headers, agent: false }, (response) => {
      response.resume();
      response.once('end', () => resolve(response.statusCode ?? 0));
    });
    request.once('error', () => resolve(0));
    request.end(body);
  });
}

/** Thrown when `gateway serve` refuses `--workers` (a gateway without worker support). */
export class WorkersUnsupportedError extends Error {}

/** Thrown when the management API refuses a definition (400: it names what it cannot deploy). */
export class DeployRefusedError extends Error {}

const require = createRequire(import.meta.url);
const GATEWAY_BIN = join(dirname(require.resolve('@mcp-identity/gateway')), 'bin.js');

export async function startGatewayProcess(options: GatewayProcessOptions): Promise<GatewayProcess> {
  const [httpsPort, httpPort, managementPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const password = randomToken(18);
  mkdirSync(options.dir, { recursive: true });
  const configFile = writeGatewayConfig(options.dir, {
    dataDir: join(options.dir, 'data'),
    httpsPort,
    httpPort,
    managementPort,
    adminPasswordHash: await hashSecret(password),
    keyManager: options.keyManager,
    tokenCacheEntries: options.tokenCacheEntries,
  });
  const logFile = join(options.dir, 'gateway.log');
  const log = openSync(logFile, 'a');
  const nodeFlags = [
    ...(options.cpuProfileDir ? ['--cpu-prof', '--cpu-prof-dir', options.cpuProfileDir] : []),
    ...(options.nodeFlags ?? []),
  ];
  const args = [...nodeFlags, options.bin ?? GATEWAY_BIN, 'serve', '--config', configFile];
  args.push('--workers', String(options.workers ?? 1));
  const [command, ...prefix] = [...(options.wrapper ?? []), process.execPath];
  const child = spawn(command as string, [...prefix, ...args], {
    stdio: ['ignore', log, log],
    env: { ...process.env, ...options.env },
  });
  closeSync(log);
  const exited = once(child, 'exit');
  let hasExited = false;
  void exited.then(() => {
    hasExited = true;
  });
  const stop = async () => {
    if (hasExited) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };

  const plainUrl = `http://127.0.0.1:${httpPort}`;
  // Under a wrapper such as valgrind, start-up takes minutes on a busy machine.
  const startSeconds = options.wrapper ? 600 : 30;
  const deadline = Date.now() + startSeconds * 1000;
  for (;;) {
    if (hasExited) {
      const text = readFileSync(logFile, 'utf8');
      if (options.workers !== undefined && /workers/i.test(text)) {
        throw new WorkersUnsupportedError(text.trim().split('\n').at(-1));
      }
      throw new Error(`the gateway exited while starting:\n${text}`);
    }
    const ready = await fetch(`${plainUrl}/_gateway-health/ready`).then(
      (response) => response.ok,
      () => false,
    );
    if (ready) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`the gateway was not ready within ${startSeconds} s; log: ${logFile}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }

  const managementUrl = `http://127.0.0.1:${managementPort}`;
  return {
    url: plainUrl,
    plainUrl,
    pid: child.pid as number,
    stop,
    async deploy(definition, probe) {
      const response = await fetch(`${managementUrl}/api/management/v1/mcp-proxies`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Basic ${Buffer.from(`admin:${password}`).toString('base64')}`,
        },
        body: JSON.stringify(definition),
      });
      if (response.status !== 201) {
        const failure = `deploying a proxy failed: ${response.status} ${await response.text()}`;
        throw response.status === 400 ? new DeployRefusedError(failure) : new Error(failure);
      }
      const deadline = Date.now() + (options.wrapper ? 300_000 : 20_000);
      let lastStatus = 0;
      for (let inARow = 0; inARow < 20; ) {
        lastStatus = await postOnFreshConnection(
          `${plainUrl}${probe.path}`,
          probe.headers,
          probe.body,
        );
        inARow = lastStatus === 200 ? inARow + 1 : 0;
        if (Date.now() > deadline) {
          throw new Error(
            `${probe.path} was not served 20 times in a row (last: HTTP ${lastStatus})`,
          );
        }
      }
    },
  };
}

/** The `.cpuprofile` files `node --cpu-prof` wrote into a directory. */
export function cpuProfiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.cpuprofile'))
    .map((name) => join(dir, name));
}
