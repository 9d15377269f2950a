import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureCertificateAuthority } from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
import { Agent, fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StackPorts } from '../src/stack/layout.js';
import { loadOrCreateStackSecrets } from '../src/stack/secrets.js';
import { readRunningStack, stackStatePath, writeStackState } from '../src/stack/state.js';
import {
  CLI,
  portArgs,
  readState,
  runCli,
  stackPids,
  startForeground,
  waitUntilAllExited,
} from './support/cli-process.js';
import { freeStackPorts } from './support/stack-helpers.js';
import { waitFor } from './support/wait.js';

// Drives the built command (`npx tsc -b packages/cli` first) as a person does:
// child processes, real signals, a project with a subdirectory.
const STACK_MS = 180_000;
const tempDir = useTempDir();

/** A project like this repository: a workspace root with a package below it. */
function makeProject(): { root: string; subdir: string } {
  const root = tempDir();
  writeFileSync(
    join(root, 'package.json'),
    JSON.stringify({ name: 'project', private: true, workspaces: ['packages/*'] }),
  );
  const subdir = join(root, 'packages', 'app');
  mkdirSync(subdir, { recursive: true });
  writeFileSync(join(subdir, 'package.json'), JSON.stringify({ name: 'app' }));
  return { root, subdir };
}

const REPOSITORY = fileURLToPath(new URL('../../..', import.meta.url));
const SEARCH = ['call', 'search_users', '--args', '{"filter":"userName eq bob","count":1}'];

describe('a stack started with `up --detach` on non-default ports', { timeout: STACK_MS }, () => {
  let project: { root: string; subdir: string };
  let ports: StackPorts;
  let dataDir: string;
  let summary: string;

  beforeAll(async () => {
    project = makeProject();
    ports = await freeStackPorts();
    dataDir = join(project.root, '.data');
    const up = await runCli(['up', '--detach', ...portArgs(ports)], { cwd: project.root });
    expect(up.code, up.stderr).toBe(0);
    summary = up.stdout;
  }, STACK_MS);

  afterAll(async () => {
    // Normally `down` (the last test) stopped it already and removed the state.
    const state = readRunningStack(dataDir);
    if (!state) return;
    process.kill(state.supervisorPid, 'SIGTERM');
    await waitUntilAllExited(stackPids(dataDir));
  }, STACK_MS);

  it('status shows each service running, with its pid, restarts and health', async () => {
    expect(summary).toContain('mcp-identity is running in the background');
    const status = await runCli(['status'], { cwd: project.subdir });
    expect(status.code, status.stderr).toBe(0);
    const state = readState(dataDir);
    expect(state.detached).toBe(true);
    expect(status.stdout).toContain(`supervisor pid ${state.supervisorPid} (background)`);
    for (const service of state.services) {
      expect(status.stdout).toMatch(
        new RegExp(`^${service.name}\\s+running\\s+${service.pid}\\s+0\\s+healthy$`, 'm'),
      );
    }
    expect(state.services.map((service) => service.name)).toEqual([
      'idp',
      'scim-mcp',
      'gateway',
      'area-a',
    ]);
  });

  it(
    'the "Try it" commands it printed keep the ports and work as printed, from a subdirectory',
    async () => {
      const tryIt = summary
        .split('\n')
        .filter((line) => line.startsWith('  npx mcp-identity '))
        .map((line) => line.trim().replace(/^npx mcp-identity /, ''));
      const token = tryIt.find((line) => line.startsWith('token '));
      const call = tryIt.find((line) => line.startsWith('call '));
      expect(token).toContain(`--idp-port ${ports.idp}`);
      expect(call).toContain(`--gateway-https-port ${ports.gatewayHttps}`);
      for (const line of [token, call]) {
        const shell = await runShell(`node ${CLI} ${line}`, project.subdir);
        expect(shell.code, shell.stderr).toBe(0);
      }
    },
    STACK_MS,
  );

  it('helper commands run from a subdirectory find the stack with no flags', async () => {
    const token = await runCli(['token', '--scopes', 'internal_user_mgt_list'], {
      cwd: project.subdir,
    });
    expect(token.code, token.stderr).toBe(0);
    expect(token.stdout).toMatch(/^ey[\w-]+\.[\w-]+\.[\w-]+\n$/);
    expect(token.stderr).toContain('scope: internal_user_mgt_list');
  });

  it('`call` says each error once', async () => {
    const bad = await runCli(['call', 'search_users', '--args', '{"count":"x"}'], {
      cwd: project.subdir,
    });
    expect(bad.code).toBe(1);
    const said = `${bad.stdout}${bad.stderr}`;
    expect(said.match(/MCP error -32602/g)).toHaveLength(1);
    expect(said).toContain("missing required argument 'filter'");
  });

  it('a Node client trusting only the CA file reaches the IdP and the gateway over HTTPS', async () => {
    const caFile = join(dataDir, 'ca', 'ca.pem');
    expect(summary).toContain(`NODE_EXTRA_CA_CERTS=${caFile}`);
    const ca = readFileSync(caFile, 'utf8');
    expect(ca.endsWith('-----END CERTIFICATE-----\n')).toBe(true);
    // `ca` replaces the default roots: only certificates this CA issued are trusted.
    const onlyTheCa = new Agent({ connect: { ca } });
    try {
      const idp = await fetch(`https://localhost:${ports.idp}/oauth2/jwks`, {
        dispatcher: onlyTheCa,
      });
      expect(idp.status).toBe(200);
      const prm = await fetch(
        `https://localhost:${ports.gatewayHttps}/scim/.well-known/oauth-protected-resource`,
        { dispatcher: onlyTheCa },
      );
      expect(prm.status).toBe(200);
    } finally {
      await onlyTheCa.close();
    }
    // And a client without the CA is refused, so the test above is about the CA.
    await expect(fetch(`https://localhost:${ports.idp}/`)).rejects.toThrow();
  });

  it('`connect` prints a configuration that can be saved as it is for each client', async () => {
    const gateway = `https://localhost:${ports.gatewayHttps}/scim/mcp`;
    const areaA = `http://localhost:${ports.areaA}/mcp`;
    const caFile = join(dataDir, 'ca', 'ca.pem');
    const configs: Record<string, unknown> = {};
    for (const client of ['claude', 'vscode', 'cursor', 'inspector']) {
      const run = await runCli(['connect', client], { cwd: project.subdir });
      expect(run.code, run.stderr).toBe(0);
      // The advice on stderr, so `connect <client> > file` saves the configuration alone.
      expect(run.stderr).toContain(`NODE_EXTRA_CA_CERTS=${caFile}`);
      configs[client] = JSON.parse(run.stdout);
    }
    expect(configs.claude).toEqual({
      mcpServers: {
        'scim-gateway': { type: 'http', url: gateway },
        'scim-area-a': { type: 'http', url: areaA },
      },
    });
    expect(configs.vscode).toEqual({
      servers: {
        'scim-gateway': { type: 'http', url: gateway },
        'scim-area-a': { type: 'http', url: areaA },
      },
    });
    expect(configs.cursor).toEqual({
      mcpServers: { 'scim-gateway': { url: gateway }, 'scim-area-a': { url: areaA } },
    });
    expect(configs.inspector).toEqual({
      mcpServers: {
        'scim-gateway': { type: 'streamable-http', url: gateway },
        'scim-area-a': { type: 'streamable-http', url: areaA },
      },
    });
    const unknown = await runCli(['connect', 'emacs'], { cwd: project.subdir });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('Unknown client "emacs"');
  });

  it(
    'SIGKILL of each service is followed by its restart and a working tool call',
    async () => {
      for (const name of ['idp', 'scim-mcp', 'gateway', 'area-a']) {
        const before = readState(dataDir).services.find((service) => service.name === name);
        if (!before?.pid) throw new Error(`${name} has no pid`);
        process.kill(before.pid, 'SIGKILL');
        await waitFor(() => {
          const now = readState(dataDir).services.find((service) => service.name === name);
          return now?.state === 'running' && now.restarts === before.restarts + 1;
        }, `${name} to restart`);
        const after = readState(dataDir).services.find((service) => service.name === name);
        expect(after?.pid).not.toBe(before.pid);
        expect(after?.lastExit).toMatchObject({ code: null, signal: 'SIGKILL' });

        const call = await runCli(SEARCH, { cwd: project.subdir });
        expect(call.code, `${name}: ${call.stderr}`).toBe(0);
        expect(call.stdout).toMatch(/^Workflow Success/);
        expect(call.stdout).toContain("'userName': 'bob'");
      }
      const log = readFileSync(join(dataDir, 'logs', 'supervisor.log'), 'utf8');
      expect(log).toMatch(/gateway exited \(SIGKILL\)/);
      expect(log).toMatch(/gateway restarted \(pid \d+, restart #1\)/);
      const status = await runCli(['status'], { cwd: project.subdir });
      expect(status.stdout).toMatch(/^area-a\s+running\s+\d+\s+1\s+healthy$/m);
    },
    STACK_MS,
  );

  it(
    '`down` stops the whole background stack',
    async () => {
      const pids = stackPids(dataDir);
      const down = await runCli(['down'], { cwd: project.subdir });
      expect(down.code, down.stderr).toBe(0);
      expect(down.stdout).toContain(`Stopped the stack in ${dataDir}`);
      await waitUntilAllExited(pids);
      const status = await runCli(['status'], { cwd: project.subdir });
      expect(status.code).toBe(1);
      expect(status.stderr).toContain(`No stack is running from ${dataDir}`);
    },
    STACK_MS,
  );
});

async function runShell(
  command: string,
  cwd: string,
): Promise<{ code: number | null; stderr: string }> {
  const { spawn } = await import('node:child_process');
  const child = spawn('sh', ['-c', command], { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  const err: Buffer[] = [];
  child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  return { code, stderr: Buffer.concat(err).toString('utf8') };
}

describe('`up` in the foreground stops the whole stack', () => {
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    it(
      `on ${signal} to up`,
      async () => {
        const { root } = makeProject();
        const dataDir = join(root, '.data');
        const up = await startForeground(dataDir, await freeStackPorts(), root);
        const pids = stackPids(dataDir);
        up.child.kill(signal);
        expect(await up.exited).toEqual({ code: 0, signal: null });
        expect(up.stderr()).toContain(`Stopping (${signal})`);
        await waitUntilAllExited(pids);
        expect(() => readFileSync(stackStatePath(dataDir))).toThrow(/ENOENT/);
      },
      STACK_MS,
    );
  }

  it(
    'on SIGTERM to `npx mcp-identity up` (npx, a shell and the supervisor in a chain)',
    async () => {
      const { root } = makeProject();
      const dataDir = join(root, '.data');
      const ports = await freeStackPorts();
      const { spawn } = await import('node:child_process');
      const npx = spawn('npx', ['mcp-identity', 'up', '--data-dir', dataDir, ...portArgs(ports)], {
        cwd: REPOSITORY,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      npx.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString('utf8');
      });
      await waitFor(() => out.includes('mcp-identity is running'), 'the stack', 120_000);
      const pids = stackPids(dataDir);
      npx.kill('SIGTERM');
      await waitUntilAllExited(pids);
    },
    STACK_MS,
  );

  it(
    'when the parent of up dies',
    async () => {
      const { root } = makeProject();
      const dataDir = join(root, '.data');
      const ports = await freeStackPorts();
      // A stand-in for npm or a shell: it starts `up` and is then killed outright.
      const parentScript = `
        const { spawn } = require('node:child_process');
        spawn(process.execPath, ${JSON.stringify([CLI, 'up', '--data-dir', dataDir, ...portArgs(ports)])}, { stdio: 'inherit' });
        setInterval(() => {}, 1000);`;
      const { spawn } = await import('node:child_process');
      const parent = spawn(process.execPath, ['-e', parentScript], {
        cwd: root,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      parent.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString('utf8');
      });
      await waitFor(() => out.includes('mcp-identity is running'), 'the stack', 120_000);
      const pids = stackPids(dataDir);
      parent.kill('SIGKILL');
      await waitUntilAllExited(pids);
    },
    STACK_MS,
  );

  it(
    'when up itself is killed outright (the services watch their supervisor)',
    async () => {
      const { root } = makeProject();
      const dataDir = join(root, '.data');
      const up = await startForeground(dataDir, await freeStackPorts(), root);
      const pids = stackPids(dataDir);
      up.child.kill('SIGKILL');
      await waitUntilAllExited(pids);
    },
    STACK_MS,
  );
});

describe('helper commands without a reachable stack', { timeout: STACK_MS }, () => {
  it('say where no stack runs, and name the URL a network error came from', async () => {
    const { root, subdir } = makeProject();
    const missing = await runCli(['token', '--scopes', 'x'], { cwd: subdir });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(
      `error: No stack is running from ${join(root, '.data')}: start one with "mcp-identity up".\n`,
    );

    // A stack whose state names ports nothing listens on (this process stands in
    // for its supervisor).
    const dataDir = join(root, '.data');
    loadOrCreateStackSecrets(dataDir);
    await ensureCertificateAuthority(dataDir);
    const ports = await freeStackPorts();
    writeStackState(dataDir, {
      supervisorPid: process.pid,
      detached: true,
      startedAt: new Date().toISOString(),
      ports,
      services: [],
    });
    const token = await runCli(['token', '--scopes', 'x'], { cwd: subdir });
    expect(token.code).toBe(1);
    expect(token.stderr).toMatch(
      new RegExp(
        `^error: cannot reach https://localhost:${ports.idp}/oauth2/token: connect ECONNREFUSED`,
      ),
    );
  });
});
