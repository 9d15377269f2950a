import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * User-space instructions a process executes, counted by Valgrind's callgrind (Debian's
 * valgrind). Where the machine exposes no hardware counters (`perf stat -e instructions` says
 * "not supported", as in most VMs) this is the repeatable measure of CPU cost: unlike CPU time it
 * does not move with the load other processes put on the machine. It leaves out the kernel
 * (system calls, TCP on loopback), which `--syscalls` counts instead. The process runs some 50×
 * slower under callgrind, so count instructions per request, never time.
 */
export function callgrindInstalled(): boolean {
  return ['/usr/bin/valgrind', '/usr/bin/callgrind_control'].every((path) => existsSync(path));
}

/**
 * The command prefix that runs a process under callgrind, writing its counts into `dir` (one
 * file per process and dump). Counting starts at once; `zero` and `dump` frame a measurement.
 */
export function callgrindCommand(dir: string): string[] {
  return [
    'valgrind',
    '--tool=callgrind',
    `--callgrind-out-file=${join(dir, 'callgrind.out.%p')}`,
    '--trace-children=no',
  ];
}

const control = promisify(execFile);

/** The process to talk to; `uid` when it runs as another user (vgdb's pipes are its own). */
export interface Counted {
  pid: number;
  uid?: number | undefined;
}

function callgrindControl(target: Counted, command: '--zero' | '--dump') {
  const user = target.uid === undefined ? {} : { uid: target.uid, gid: target.uid };
  return control('callgrind_control', [command, String(target.pid)], { ...user, timeout: 60_000 });
}

/** Resets the counters of a process running under callgrind. */
export async function zeroCounters(target: Counted): Promise<void> {
  await callgrindControl(target, '--zero');
}

/**
 * Writes the counts since the last `zeroCounters` and returns their total: instructions executed
 * by every thread of the process (JavaScript, V8's compiler and collector threads, libuv).
 */
export async function dumpInstructions(target: Counted, dir: string): Promise<number> {
  const before = new Set(readdirSync(dir));
  await callgrindControl(target, '--dump');
  const prefix = `callgrind.out.${target.pid}.`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const fresh = readdirSync(dir).filter((name) => name.startsWith(prefix) && !before.has(name));
    for (const name of fresh) {
      const match = /^summary:\s*(\d+)/m.exec(readFileSync(join(dir, name), 'utf8'));
      if (match) return Number(match[1]);
    }
    if (Date.now() > deadline)
      throw new Error(`callgrind wrote no dump for ${target.pid} within 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
