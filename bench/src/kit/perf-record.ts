import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, rmSync } from 'node:fs';
import { promisify } from 'node:util';

/**
 * On-CPU sampling of a running process with Linux `perf record` (Debian's linux-perf), kernel
 * included. Unlike V8's profiler it samples only while the process is on a CPU, so it shows how
 * CPU time splits between JavaScript, Node's C++ and the kernel. Start the process with
 * `node --perf-basic-prof` so JIT-compiled JavaScript has names; that flag writes
 * /tmp/perf-<pid>.map, which `removePerfMap` deletes.
 */
export function perfInstalled(): boolean {
  return existsSync('/usr/bin/perf');
}

export async function recordPerf(
  pid: number,
  dataFile: string,
): Promise<{ stop(): Promise<void> }> {
  const child = spawn('perf', ['record', '-F', '999', '-g', '-p', String(pid), '-o', dataFile], {
    stdio: 'ignore',
  });
  const exited = once(child, 'exit');
  // perf needs a moment to open its events; a short settle is harmless before a long run.
  await new Promise((resolve) => setTimeout(resolve, 300));
  if (child.exitCode !== null) throw new Error(`perf record exited with ${child.exitCode}`);
  return {
    async stop() {
      child.kill('SIGINT');
      await exited;
    },
  };
}

/** `perf report` rows: overhead and name, by shared object (`dso`) or by symbol. */
export async function perfReport(
  dataFile: string,
  sort: 'dso' | 'dso,sym',
  top: number,
): Promise<{ share: string; name: string }[]> {
  const { stdout } = await promisify(execFile)(
    'perf',
    ['report', '-i', dataFile, '--stdio', '--no-children', '-g', 'none', '--sort', sort],
    { maxBuffer: 64 << 20 },
  );
  return stdout
    .split('\n')
    .filter((line) => /^\s+[\d.]+%/.test(line))
    .slice(0, top)
    .map((line) => {
      const [share, ...rest] = line.trim().split(/\s+/);
      return { share: share as string, name: rest.join(' ') };
    });
}

export function removePerfMap(pid: number): void {
  rmSync(`/tmp/perf-${pid}.map`, { force: true });
}
