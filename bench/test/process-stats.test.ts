import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  connectionsPerProcess,
  processTree,
  treeCpuMs,
  treeCpuSplitMs,
  treeRssBytes,
  treeSleeps,
} from '../src/kit/process-stats.js';

// A parent that does nothing but wait for its child, which burns 300 ms of CPU time (not wall
// time: the machine may be busy) and then waits.
const BURNING_CHILD = `
const { spawn } = require('node:child_process');
const child = spawn(process.execPath, ['-e', \`
  let x = 0;
  while (process.cpuUsage().user < 300_000) for (let i = 0; i < 1e6; i++) x += i;
  process.stdout.write('burnt\\\\n'); setInterval(() => {}, 1000);
\`], { stdio: ['ignore', 'inherit', 'inherit'] });
process.stdout.write(child.pid + '\\n');
process.on('SIGTERM', () => { child.kill(); process.exit(0); });
setInterval(() => {}, 1000);
`;

describe.runIf(process.platform === 'linux')('process tree statistics from /proc', () => {
  it("counts the CPU time of a process's descendants, not only its own", async () => {
    const parent = spawn(process.execPath, ['-e', BURNING_CHILD], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      let output = '';
      parent.stdout?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      const deadline = Date.now() + 15_000;
      while (!output.includes('burnt') && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(output).toContain('burnt');
      const childPid = Number(output.split('\n')[0]);
      const pid = parent.pid as number;
      expect(processTree(pid)).toContain(childPid);
      const ownOnly = treeCpuMs(childPid) as number;
      const tree = treeCpuMs(pid) as number;
      expect(ownOnly).toBeGreaterThanOrEqual(250);
      expect(tree).toBeGreaterThan(ownOnly);
      // The burn is user-space work: most of the child's CPU time is not in the kernel.
      const split = treeCpuSplitMs(childPid) as { userMs: number; systemMs: number };
      expect(split.userMs).toBeGreaterThan(split.systemMs);
      expect(treeRssBytes(pid)).toBeGreaterThan(treeRssBytes(childPid) as number);
    } finally {
      parent.kill('SIGTERM');
      await once(parent, 'exit');
    }
  });

  it('counts each time an event loop waits with nothing to do', async () => {
    // Told to go, it waits for 20 timers one after the other, then says so.
    const child = spawn(
      process.execPath,
      [
        '-e',
        `process.stdin.once('data', async () => {
          for (let i = 0; i < 20; i++) await new Promise((r) => setTimeout(r, 5));
          process.stdout.write('done');
        });
        process.stdout.write('ready');`,
      ],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    try {
      let output = '';
      const said = (word: string) =>
        new Promise<void>((resolve) => {
          const listen = (chunk: Buffer) => {
            output += chunk.toString();
            if (!output.includes(word)) return;
            child.stdout?.off('data', listen);
            resolve();
          };
          child.stdout?.on('data', listen);
        });
      await said('ready');
      const before = treeSleeps(child.pid as number) as number;
      child.stdin?.write('go');
      await said('done');
      const after = treeSleeps(child.pid as number) as number;
      expect(after - before).toBeGreaterThanOrEqual(20);
    } finally {
      child.kill();
      await once(child, 'exit');
    }
  });

  it('tells how many connections each process of a cluster holds', async () => {
    // Two cluster workers share one port; each greets a connection once it holds it. A file,
    // not `-e`: cluster workers run the primary's script.
    const dir = mkdtempSync(join(tmpdir(), 'process-stats-'));
    const script = join(dir, 'cluster.cjs');
    writeFileSync(
      script,
      `const cluster = require('node:cluster');
        if (cluster.isPrimary) {
          cluster.schedulingPolicy = cluster.SCHED_RR;
          let ready = 0;
          for (let i = 0; i < 2; i++) {
            cluster.fork().on('message', (port) => {
              if (++ready === 2) process.stdout.write(port + '\\n');
            });
          }
        } else {
          const server = require('node:net').createServer((socket) => socket.write('hi'));
          server.listen(0, '127.0.0.1', () => process.send(server.address().port));
        }`,
    );
    const cluster = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const sockets: Socket[] = [];
    try {
      const [line] = (await once(cluster.stdout as NodeJS.ReadableStream, 'data')) as [Buffer];
      const port = Number(line.toString().trim());
      // One at a time: round robin gives the next connection to the worker that took the one
      // before last, so four connections made in turn are split 2 and 2.
      for (let i = 0; i < 4; i++) {
        const socket = connect(port, '127.0.0.1');
        sockets.push(socket);
        await once(socket, 'data');
      }
      expect(connectionsPerProcess(cluster.pid as number, port)).toEqual([2, 2]);
      expect(connectionsPerProcess(cluster.pid as number, port + 1)).toEqual([]);
    } finally {
      for (const socket of sockets) socket.destroy();
      cluster.kill();
      await once(cluster, 'exit');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads nothing for a process that does not exist', () => {
    expect(treeCpuMs(2 ** 22 + 1)).toBeUndefined();
    expect(treeRssBytes(2 ** 22 + 1)).toBeUndefined();
    expect(treeSleeps(2 ** 22 + 1)).toBeUndefined();
  });
});
