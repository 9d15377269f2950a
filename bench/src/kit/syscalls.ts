import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';

/**
 * Counts the system calls of a running process and its threads with `strace -c -f` (Debian's
 * strace). ptrace slows the process down a lot, so use it for counts per request, never for
 * timing.
 */
export function straceInstalled(): boolean {
  return ['/usr/bin/strace', '/bin/strace'].some((path) => existsSync(path));
}

export async function traceSyscalls(
  pid: number,
  outputFile: string,
): Promise<{ stop(): Promise<Map<string, number>> }> {
  const child = spawn('strace', ['-c', '-f', '-p', String(pid), '-o', outputFile], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = once(child, 'exit');
  // strace reports each attached thread on stderr; wait until it has attached.
  const deadline = Date.now() + 10_000;
  while (!/attached/i.test(stderr) && child.exitCode === null && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (child.exitCode !== null || !/attached/i.test(stderr)) {
    child.kill('SIGKILL');
    throw new Error(`strace could not attach to ${pid}: ${stderr.trim()}`);
  }
  return {
    async stop() {
      child.kill('SIGINT');
      await exited;
      return parseStraceSummary(readFileSync(outputFile, 'utf8'));
    },
  };
}

/** Calls per system call from the table `strace -c` prints. */
export function parseStraceSummary(text: string): Map<string, number> {
  const calls = new Map<string, number>();
  for (const line of text.split('\n')) {
    // % time, seconds, usecs/call, calls, [errors,] syscall
    const fields = line.trim().split(/\s+/);
    if (fields.length < 5 || !/^[\d.]+$/.test(fields[0] as string)) continue;
    const name = fields.at(-1) as string;
    if (name === 'total') continue;
    calls.set(name, Number(fields[3]));
  }
  return calls;
}
