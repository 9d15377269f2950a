import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { HealthPolicy } from '../health-monitor.js';
import type { ServiceStatus } from '../supervisor.js';
import type { StackPorts } from './layout.js';

/**
 * What a running stack records in its data directory, so that `status`,
 * `down` and the helper commands find its supervisor and its addresses.
 */
export interface StackState {
  supervisorPid: number;
  /** Started with `up --detach`: `down` is the way to stop it. */
  detached: boolean;
  startedAt: string;
  ports: StackPorts;
  /** How the supervisor checks the running services (absent in files of older versions). */
  health?: HealthPolicy;
  services: ServiceStatus[];
}

const FILE = 'stack-state.json';

export function stackStatePath(dataDir: string): string {
  return join(dataDir, FILE);
}

/** Replaces the state file in one step, so a reader never sees half of it. */
export function writeStackState(dataDir: string, state: StackState): void {
  const path = stackStatePath(dataDir);
  const scratch = `${path}.${process.pid}.tmp`;
  writeFileSync(scratch, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o644 });
  renameSync(scratch, path);
}

export function removeStackState(dataDir: string): void {
  rmSync(stackStatePath(dataDir), { force: true });
}

/** The state of the stack whose supervisor is still alive, or undefined. */
export function readRunningStack(dataDir: string): StackState | undefined {
  let state: StackState;
  try {
    state = JSON.parse(readFileSync(stackStatePath(dataDir), 'utf8')) as StackState;
  } catch {
    return undefined;
  }
  return isAlive(state.supervisorPid) ? state : undefined;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  return !isZombie(pid);
}

/** An exited process its parent has not reaped yet still answers signal 0 (Linux: state Z). */
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}
