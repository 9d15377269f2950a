import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { Pool } from 'undici';

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

/**
 * Sends `rate` requests per second for `seconds` on a keep-alive pool of `connections`, whatever
 * the answers' pace (open loop), and resolves with the number answered 2xx (anything else
 * throws). Counted instructions include work that scales with time rather than requests (event
 * loop wake-ups, timers), and a closed-loop client's pace under callgrind follows the machine's
 * load; at a fixed rate every build is counted over the same traffic.
 */
export async function fixedRateLoad(spec: {
  url: string;
  rate: number;
  seconds: number;
  connections: number;
  headers: Record<string, string>;
  body: string;
}): Promise<number> {
  const url = new URL(spec.url);
  const pool = new Pool(url.origin, { connections: spec.connections });
  const total = Math.round(spec.rate * spec.seconds);
  const start = performance.now();
  const sent: Promise<void>[] = [];
  let failure: Error | undefined;
  try {
    for (let i = 0; i < total && !failure; i++) {
      const due = start + (i * 1000) / spec.rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      sent.push(
        pool
          .request({
            path: `${url.pathname}${url.search}`,
            method: 'POST',
            headers: spec.headers,
            body: spec.body,
          })
          .then(async (response) => {
            await response.body.dump();
            if (response.statusCode >= 300) throw new Error(`HTTP ${response.statusCode}`);
          })
          .catch((error: Error) => {
            failure ??= error;
          }),
      );
    }
    await Promise.all(sent);
    if (failure) throw new Error(`${spec.url}: ${failure.message}`);
    return total;
  } finally {
    await pool.close();
  }
}
