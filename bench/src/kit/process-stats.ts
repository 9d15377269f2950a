import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * CPU time and memory of a process and all its descendants (workers, nginx's worker processes),
 * read from Linux's /proc. Elsewhere every reading is `undefined` and benchmarks print "n/a".
 */

const TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

interface ProcStat {
  ppid: number;
  userTicks: number;
  systemTicks: number;
}

function readStat(pid: number): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may contain spaces and parentheses; fields resume after the last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    // Fields 4 (ppid), 14 (utime) and 15 (stime) of proc(5), counted from `state` (field 3).
    return {
      ppid: Number(fields[1]),
      userTicks: Number(fields[11]),
      systemTicks: Number(fields[12]),
    };
  } catch {
    return undefined;
  }
}

/** The pid and the pids of all its live descendants. */
export function processTree(rootPid: number): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [rootPid];
  }
  const children = new Map<number, number[]>();
  for (const entry of entries) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const stat = readStat(pid);
    if (!stat) continue;
    const siblings = children.get(stat.ppid) ?? [];
    siblings.push(pid);
    children.set(stat.ppid, siblings);
  }
  const tree = [rootPid];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i] as number) ?? []));
  return tree;
}

/** CPU time, in milliseconds, consumed so far by a process tree: in user space and in the kernel. */
export function treeCpuSplitMs(rootPid: number): { userMs: number; systemMs: number } | undefined {
  let user = 0;
  let system = 0;
  let seen = false;
  for (const pid of processTree(rootPid)) {
    const stat = readStat(pid);
    if (!stat) continue;
    seen = true;
    user += stat.userTicks;
    system += stat.systemTicks;
  }
  const ms = (ticks: number) => (ticks * 1000) / TICKS_PER_SECOND;
  return seen ? { userMs: ms(user), systemMs: ms(system) } : undefined;
}

/** User + system CPU time, in milliseconds, consumed so far by a process tree. */
export function treeCpuMs(rootPid: number): number | undefined {
  const split = treeCpuSplitMs(rootPid);
  return split && split.userMs + split.systemMs;
}

/**
 * The sum over a process tree of one number in `/proc/<pid>/status` (the first group of
 * `pattern`), or undefined when no process of the tree shows it.
 */
function sumStatusField(rootPid: number, pattern: RegExp): number | undefined {
  let total = 0;
  let seen = false;
  for (const pid of processTree(rootPid)) {
    try {
      const match = pattern.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (!match) continue;
      total += Number(match[1]);
      seen = true;
    } catch {
      // The process exited between the listing and the read.
    }
  }
  return seen ? total : undefined;
}

/**
 * How many times the main threads of a process tree have gone to sleep so far (Linux's voluntary
 * context switches of each process's first thread): for an event loop, each is a wait in
 * `epoll_wait` with nothing to do, and each costs a wake-up later.
 */
export function treeSleeps(rootPid: number): number | undefined {
  return sumStatusField(rootPid, /^voluntary_ctxt_switches:\s+(\d+)/m);
}

/** Resident memory of a process tree, in bytes. */
export function treeRssBytes(rootPid: number): number | undefined {
  const kib = sumStatusField(rootPid, /^VmRSS:\s+(\d+) kB/m);
  return kib === undefined ? undefined : kib * 1024;
}

/** `st` of an established socket in /proc/net/tcp (the kernel's TCP_ESTABLISHED). */
const ESTABLISHED = '01';

/**
 * Inodes of the established TCP sockets whose local port is `port` (IPv4 and IPv6); undefined
 * when neither table can be read.
 */
function establishedSocketInodes(port: number): Set<string> | undefined {
  let inodes: Set<string> | undefined;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    inodes ??= new Set();
    // Rows after the header: sl, local_address (hex address:hex port), rem_address, st, …, inode.
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const local = fields[1];
      if (local === undefined || fields[3] !== ESTABLISHED) continue;
      if (Number.parseInt(local.slice(local.lastIndexOf(':') + 1), 16) === port) {
        inodes.add(fields[9] as string);
      }
    }
  }
  return inodes;
}

/**
 * How the established connections to `port` are spread over the processes of a tree: one count
 * per process that holds any, largest first (`[7, 3]`: two workers, one with 7 connections).
 * With `--workers`, Node's cluster hands each new connection to whichever worker is free first,
 * so 10 connections are not always split 5 and 5, and an uneven split costs less per request
 * (a busier worker sleeps less). Undefined where /proc cannot tell.
 */
export function connectionsPerProcess(rootPid: number, port: number): number[] | undefined {
  const inodes = establishedSocketInodes(port);
  if (inodes === undefined) return undefined;
  const counts: number[] = [];
  for (const pid of processTree(rootPid)) {
    let held = 0;
    try {
      for (const fd of readdirSync(`/proc/${pid}/fd`)) {
        const target = readlinkSync(`/proc/${pid}/fd/${fd}`, 'utf8');
        if (target.startsWith('socket:[') && inodes.has(target.slice(8, -1))) held++;
      }
    } catch {
      // The process exited, or its descriptors are not ours to read.
    }
    if (held > 0) counts.push(held);
  }
  return counts.sort((a, b) => b - a);
}

/** Samples the peak RSS of a process tree until `stop()` is called. */
export function samplePeakRss(rootPid: number, everyMs = 250): { stop(): number | undefined } {
  let peak: number | undefined;
  const sample = () => {
    const rss = treeRssBytes(rootPid);
    if (rss !== undefined) peak = Math.max(peak ?? 0, rss);
  };
  sample();
  const timer = setInterval(sample, everyMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return peak;
    },
  };
}
