import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { useTempDir } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRunningStack } from '../src/stack/state.js';
import type { ServiceStatus } from '../src/supervisor.js';
import {
  portArgs,
  readState,
  runCli,
  stackPids,
  waitUntilAllExited,
} from './support/cli-process.js';
import { freeStackPorts } from './support/stack-helpers.js';
import { waitFor } from './support/wait.js';

// Drives the built command (`npx tsc -b packages/cli` first): a real `up --detach` stack whose
// supervisor is told, through `up`'s flags, to replace a service failing its health for 2 s.
const STACK_MS = 240_000;
const HEALTH = { intervalMs: 500, unhealthyAfterMs: 2_000 };
/** From SIGSTOP to SIGKILL: the limit, one interval until the next check, one for its timeout. */
const KILL_WITHIN_MS = HEALTH.unhealthyAfterMs + 2 * HEALTH.intervalMs;
/** A loaded 2-core machine delays timers and the state file's write. */
const SLACK_MS = 1_500;
const tempDir = useTempDir();

describe('a hung service of an `up` stack', { timeout: STACK_MS }, () => {
  let dataDir: string;

  beforeAll(async () => {
    const root = tempDir();
    dataDir = join(root, '.data');
    const up = await runCli(
      [
        'up',
        '--detach',
        '--data-dir',
        dataDir,
        ...portArgs(await freeStackPorts()),
        '--health-interval-ms',
        String(HEALTH.intervalMs),
        '--unhealthy-after-ms',
        String(HEALTH.unhealthyAfterMs),
      ],
      { cwd: root },
    );
    expect(up.code, up.stderr).toBe(0);
  }, STACK_MS);

  afterAll(async () => {
    const state = readRunningStack(dataDir);
    if (!state) return;
    const pids = stackPids(dataDir);
    process.kill(state.supervisorPid, 'SIGTERM');
    await waitUntilAllExited(pids);
  }, STACK_MS);

  it(
    'is killed and restarted within the configured time (SIGSTOP of each service), and status says so',
    async () => {
      expect(readState(dataDir).health).toEqual(HEALTH);
      const service = (name: string): ServiceStatus | undefined =>
        readState(dataDir).services.find((s) => s.name === name);
      for (const name of ['scim-mcp', 'gateway', 'idp', 'area-a']) {
        const before = service(name);
        if (!before?.pid) throw new Error(`${name} has no pid`);
        const stoppedAt = Date.now();
        process.kill(before.pid, 'SIGSTOP');
        try {
          await waitFor(() => {
            const now = service(name);
            return now?.state === 'running' && now.restarts === before.restarts + 1;
          }, `${name} to be restarted`);
        } finally {
          if (service(name)?.pid === before.pid) process.kill(before.pid, 'SIGKILL');
        }
        const after = service(name);
        expect(after?.pid).not.toBe(before.pid);
        expect(after?.lastExit?.signal).toBe('SIGKILL');
        expect(after?.lastRestart).toMatchObject({
          reason: 'unhealthy',
          detail: expect.stringMatching(/^unhealthy for \d s \(no answer within 0\.5 s\)$/),
        });
        const killedAfter = Date.parse(after?.lastExit?.at ?? '') - stoppedAt;
        expect(killedAfter, name).toBeGreaterThanOrEqual(
          HEALTH.unhealthyAfterMs - HEALTH.intervalMs,
        );
        expect(killedAfter, name).toBeLessThan(KILL_WITHIN_MS + SLACK_MS);
      }

      const call = await runCli(
        [
          'call',
          'search_users',
          '--args',
          '{"filter":"userName eq bob","count":1}',
          '--data-dir',
          dataDir,
        ],
        { cwd: dataDir },
      );
      expect(call.code, call.stderr).toBe(0);
      expect(call.stdout).toContain("'userName': 'bob'");

      const status = await runCli(['status', '--data-dir', dataDir], { cwd: dataDir });
      expect(status.code, status.stdout).toBe(0);
      for (const name of ['scim-mcp', 'gateway', 'idp', 'area-a']) {
        expect(status.stdout).toMatch(
          new RegExp(`^${name}\\s+running\\s+\\d+\\s+1\\s+healthy$`, 'm'),
        );
        expect(status.stdout).toMatch(
          new RegExp(
            `^${name}: restarted 1×, last at \\S+: unhealthy for \\d s \\(no answer within 0\\.5 s\\)$`,
            'm',
          ),
        );
      }
      const log = readFileSync(join(dataDir, 'logs', 'supervisor.log'), 'utf8');
      expect(log).toMatch(
        /gateway unhealthy for \d s \(no answer within 0\.5 s\): killing pid \d+ \(SIGKILL\)/,
      );
    },
    STACK_MS,
  );
});
