import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createApp, createLogger } from '@mcp-identity/common';
import { startTestServer, useTempDir } from '@mcp-identity/common/testing';
import { describe, expect, it } from 'vitest';
import { type ServiceStatus, Supervisor } from '../src/supervisor.js';
import { waitFor } from './support/wait.js';

const tempDir = useTempDir();
const toy = join(import.meta.dirname, 'fixtures/toy-service.ts');

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function toySpec(mode: 'serve' | 'crash' | 'once', port: number, logFile: string, marker = '') {
  return {
    name: 'toy',
    command: process.execPath,
    args: ['--import', 'tsx', toy, mode, String(port), marker],
    logFile,
    healthUrl: `http://127.0.0.1:${port}/health`,
    startTimeoutMs: 20_000,
  };
}

describe('Supervisor', () => {
  it('starts a service, waits for its health, and stops it gracefully', async () => {
    const supervisor = new Supervisor();
    const port = await freePort();
    const logFile = join(tempDir(), 'logs/toy.log');
    const service = await supervisor.start(toySpec('serve', port, logFile));
    const answer = (await (await fetch(`http://127.0.0.1:${port}/pid`)).json()) as { pid: number };
    expect(answer.pid).toBe(service.pid);
    await supervisor.stopAll();
    expect(await service.exited).toBe(0);
    expect(readFileSync(logFile, 'utf8')).toContain('toy listening');
    await expect(fetch(`http://127.0.0.1:${port}/health`)).rejects.toThrow();
  });

  it('reports a service that exits during start-up, with the end of its log', async () => {
    const supervisor = new Supervisor();
    const logFile = join(tempDir(), 'crash.log');
    const failure = supervisor.start(toySpec('crash', await freePort(), logFile));
    await expect(failure).rejects.toThrow(/toy did not start: the process exited with code 3/);
    await expect(failure).rejects.toThrow(/fatal: cannot open database/);
  });

  it('gives up on a service that never becomes healthy, naming the URL', async () => {
    const supervisor = new Supervisor();
    const unhealthy = await startTestServer(
      createApp({ logger: createLogger({ level: 'silent' }) }),
    );
    const spec = {
      ...toySpec('serve', await freePort(), join(tempDir(), 'wrong.log')),
      startTimeoutMs: 1000,
    };
    spec.healthUrl = `${unhealthy.url}/health`;
    await expect(supervisor.start(spec)).rejects.toThrow(
      `toy did not start: ${unhealthy.url}/health not healthy after 1 s (HTTP 404)`,
    );
  });

  it('restarts a service that exits, with backoff, and counts the restart', async () => {
    const lines: string[] = [];
    const supervisor = new Supervisor({ log: (line) => lines.push(line) });
    const port = await freePort();
    const service = await supervisor.start(toySpec('serve', port, join(tempDir(), 'toy.log')));
    const firstPid = service.pid;
    if (firstPid === undefined) throw new Error('no pid');
    process.kill(firstPid, 'SIGKILL');
    await waitFor(
      () => service.status.state === 'running' && service.status.restarts === 1,
      'the restart',
    );
    expect(service.pid).not.toBe(firstPid);
    const answer = (await (await fetch(`http://127.0.0.1:${port}/pid`)).json()) as { pid: number };
    expect(answer.pid).toBe(service.pid);
    expect(service.status.lastExit).toMatchObject({ code: null, signal: 'SIGKILL' });
    expect(lines).toEqual([
      'toy exited (SIGKILL)',
      'toy: restart #1 in 250 ms',
      `toy restarted (pid ${service.pid}, restart #1)`,
    ]);
    await supervisor.stopAll();
    expect(service.status.state).toBe('stopped');
  });

  it('gives a service up after repeated failed start-ups, and says so', async () => {
    const lines: string[] = [];
    const supervisor = new Supervisor({
      log: (line) => lines.push(line),
      restart: { initialDelayMs: 10, maxStartFailures: 3 },
    });
    const gaveUp = new Promise((resolve) => supervisor.once('gave-up', resolve));
    const marker = join(tempDir(), 'started-once');
    const service = await supervisor.start(
      toySpec('once', await freePort(), join(tempDir(), 'once.log'), marker),
    );
    process.kill(service.pid ?? 0, 'SIGKILL');
    await expect(gaveUp).resolves.toMatchObject({ name: 'toy', state: 'failed', restarts: 3 });
    await expect(service.exited).resolves.toBe(3);
    expect(lines.filter((line) => line.startsWith('toy did not start'))).toHaveLength(3);
    expect(lines.at(-1)).toBe('toy: 3 failed start-ups in a row, giving up');
    // The delays doubled: 10, 20, 40 ms.
    expect(lines.filter((line) => / in \d+ ms$/.test(line)).map((l) => l.split(' in ')[1])).toEqual(
      ['10 ms', '20 ms', '40 ms'],
    );
  });

  it('kills a hung service (SIGSTOP) once its health checks failed for the configured time, and restarts it', async () => {
    const health = { intervalMs: 250, unhealthyAfterMs: 1500 };
    const lines: string[] = [];
    const supervisor = new Supervisor({ log: (line) => lines.push(line), health });
    const changes: ServiceStatus[] = [];
    supervisor.on('change', (status) => changes.push(status));
    const port = await freePort();
    const service = await supervisor.start(toySpec('serve', port, join(tempDir(), 'hung.log')));
    const firstPid = service.pid;
    if (firstPid === undefined) throw new Error('no pid');
    const stoppedAt = Date.now();
    process.kill(firstPid, 'SIGSTOP');
    try {
      await waitFor(
        () => service.status.state === 'running' && service.status.restarts === 1,
        'the restart',
      );
    } finally {
      // A failing test must not leave the stopped process behind.
      if (service.status.restarts === 0) process.kill(firstPid, 'SIGKILL');
    }
    const killedAt = Date.parse(service.status.lastExit?.at ?? '');
    // A check sent just before the SIGSTOP counts from its own start: at most one interval early.
    expect(killedAt - stoppedAt).toBeGreaterThanOrEqual(
      health.unhealthyAfterMs - health.intervalMs,
    );
    // The last check to fail waits one interval, and the next starts at most one interval later.
    expect(killedAt - stoppedAt).toBeLessThan(
      health.unhealthyAfterMs + 2 * health.intervalMs + 1000,
    );
    expect(service.status.lastExit).toMatchObject({ code: null, signal: 'SIGKILL' });
    expect(service.status.lastRestart).toMatchObject({
      reason: 'unhealthy',
      detail: expect.stringMatching(/^unhealthy for \d s \(no answer within 0\.25 s\)$/),
    });
    expect(service.status.unhealthy).toBeUndefined();
    // While it hung, the failure was reported (what `status` reads from the state file).
    expect(changes.find((status) => status.unhealthy)?.unhealthy).toMatchObject({
      problem: 'no answer within 0.25 s',
    });
    const answer = (await (await fetch(`http://127.0.0.1:${port}/pid`)).json()) as { pid: number };
    expect(answer.pid).toBe(service.pid);
    expect(lines).toEqual([
      `toy ${service.status.lastRestart?.detail}: killing pid ${firstPid} (SIGKILL)`,
      'toy: restart #1 in 250 ms',
      `toy restarted (pid ${service.pid}, restart #1)`,
    ]);
    await supervisor.stopAll();
  });

  it('leaves a service alone that answers its health checks again before the limit', async () => {
    const supervisor = new Supervisor({ health: { intervalMs: 100, unhealthyAfterMs: 60_000 } });
    const changes: ServiceStatus[] = [];
    supervisor.on('change', (status) => changes.push(status));
    const service = await supervisor.start(
      toySpec('serve', await freePort(), join(tempDir(), 'paused.log')),
    );
    const pid = service.pid ?? 0;
    process.kill(pid, 'SIGSTOP');
    await waitFor(() => service.status.unhealthy !== undefined, 'a failed health check');
    process.kill(pid, 'SIGCONT');
    await waitFor(() => service.status.unhealthy === undefined, 'the service to answer again');
    expect(service.status).toMatchObject({ state: 'running', pid, restarts: 0 });
    expect(changes.at(-1)?.unhealthy).toBeUndefined();
    await supervisor.stopAll();
    expect(await service.exited).toBe(0);
  });
});
