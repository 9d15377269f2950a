import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { StackPorts } from '../../src/stack/layout.js';
import { isAlive, type StackState, stackStatePath } from '../../src/stack/state.js';
import { waitFor } from './wait.js';

/** The built command (`npx tsc -b packages/cli` first). */
export const CLI = fileURLToPath(new URL('../../dist/bin.js', import.meta.url));

export interface CliProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `mcp-identity <args>` as a child process, collecting its output. */
export function spawnCli(args: string[], options: { cwd: string }): CliProcess {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: options.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, MCP_IDENTITY_DATA_DIR: undefined },
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout?.on('data', (chunk: Buffer) => out.push(chunk));
  child.stderr?.on('data', (chunk: Buffer) => err.push(chunk));
  const exited = once(child, 'close').then(([code, signal]) => ({
    code: code as number | null,
    signal: signal as NodeJS.Signals | null,
  }));
  return {
    child,
    stdout: () => Buffer.concat(out).toString('utf8'),
    stderr: () => Buffer.concat(err).toString('utf8'),
    exited,
  };
}

/** Runs `mcp-identity <args>` to completion. */
export async function runCli(
  args: string[],
  options: { cwd: string },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const run = spawnCli(args, options);
  const { code } = await run.exited;
  return { code, stdout: run.stdout(), stderr: run.stderr() };
}

export function portArgs(ports: StackPorts): string[] {
  return [
    ['--idp-port', ports.idp],
    ['--mcp-port', ports.mcp],
    ['--gateway-https-port', ports.gatewayHttps],
    ['--gateway-http-port', ports.gatewayHttp],
    ['--management-port', ports.gatewayManagement],
    ['--area-a-port', ports.areaA],
  ].flatMap(([flag, value]) => [String(flag), String(value)]);
}

export function readState(dataDir: string): StackState {
  return JSON.parse(readFileSync(stackStatePath(dataDir), 'utf8')) as StackState;
}

/** The supervisor's and every service's pid of a running stack. */
export function stackPids(dataDir: string): number[] {
  const state = readState(dataDir);
  return [state.supervisorPid, ...state.services.map((service) => service.pid ?? 0)];
}

export async function waitUntilAllExited(pids: number[]): Promise<void> {
  await waitFor(() => pids.every((pid) => !isAlive(pid)), `pids ${pids.join(', ')} to exit`);
}

/** Starts `up` in the foreground and waits for its summary. */
export async function startForeground(
  dataDir: string,
  ports: StackPorts,
  cwd: string,
): Promise<CliProcess> {
  const up = spawnCli(['up', '--data-dir', dataDir, ...portArgs(ports)], { cwd });
  let ended = false;
  void up.exited.then(() => {
    ended = true;
  });
  await waitFor(
    () => ended || up.stdout().includes('mcp-identity is running'),
    'the stack to start',
    120_000,
  );
  if (ended) throw new Error(`up exited early:\n${up.stderr()}`);
  return up;
}
