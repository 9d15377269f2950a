/**
 * Soak: the whole stack under `mcp-identity up --detach` (real supervisor, real
 * processes) takes mixed tool calls through the gateway for N minutes while one
 * service is killed (SIGKILL) every interval, in turn. Prints the calls made,
 * the failures inside each restart window (kill → the supervisor reports the
 * service running again, plus a short grace), failures outside any window, and
 * the IdP writes lost: every user whose create_user the stack acknowledged must
 * exist at the end.
 *
 *   npm run bench:soak
 *   npm run bench:soak -- --minutes 2 --kill-every 60 --workers 4
 */

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  callToolThroughGateway,
  clientCredentialsToken,
  readRunningStack,
  type ServiceStatus,
  type StackPorts,
  stackLayout,
} from '@mcp-identity/cli';

const { values: options } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    'kill-every': { type: 'string', default: '60' },
    workers: { type: 'string', default: '4' },
  },
});
const MINUTES = Number(options.minutes);
const KILL_EVERY_MS = Number(options['kill-every']) * 1000;
const WORKERS = Number(options.workers);
/** Calls still failing this long after the service is back count against its window. */
const GRACE_MS = 2000;
const SERVICES = ['gateway', 'scim-mcp', 'idp', 'area-a'] as const;
const CLI = new URL('../../packages/cli/dist/bin.js', import.meta.url).pathname;

interface Window {
  service: string;
  killedAt: number;
  backAt?: number;
  failures: number;
}

async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  for (let i = 0; i < count; i++) {
    const server = createServer();
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  }
  const ports = servers.map((server) => (server.address() as { port: number }).port);
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

async function cli(args: string[]): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
  });
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, out };
}

const dataDir = mkdtempSync(join(tmpdir(), 'mcp-identity-soak-'));
const [idp, mcp, gatewayHttps, gatewayHttp, gatewayManagement, areaA] = await freePorts(6);
const ports = { idp, mcp, gatewayHttps, gatewayHttp, gatewayManagement, areaA } as StackPorts;
const portFlags = Object.entries({
  '--idp-port': idp,
  '--mcp-port': mcp,
  '--gateway-https-port': gatewayHttps,
  '--gateway-http-port': gatewayHttp,
  '--management-port': gatewayManagement,
  '--area-a-port': areaA,
}).flatMap(([flag, port]) => [flag, String(port)]);

const started = await cli(['up', '--detach', '--data-dir', dataDir, ...portFlags]);
if (started.code !== 0) throw new Error(`up --detach failed (exit ${started.code})`);
const layout = stackLayout(dataDir, ports);
const secrets = JSON.parse(readFileSync(join(dataDir, 'stack-secrets.json'), 'utf8'));
const services = (): ServiceStatus[] => readRunningStack(dataDir)?.services ?? [];

const { accessToken } = await clientCredentialsToken(layout, secrets.clientApp, [
  'internal_user_mgt_list',
  'internal_user_mgt_view',
  'internal_user_mgt_create',
  'internal_group_mgt_view',
]);

const windows: Window[] = [];
const acknowledged: string[] = [];
let calls = 0;
let failures = 0;
let failuresOutside = 0;
let stopping = false;
const prefix = `soak-${Date.now().toString(36)}`;

function recordFailure(at: number): void {
  failures += 1;
  const window = windows.find(
    (w) => at >= w.killedAt && (w.backAt === undefined || at <= w.backAt + GRACE_MS),
  );
  if (window) window.failures += 1;
  else failuresOutside += 1;
}

async function oneCall(worker: number, n: number): Promise<void> {
  const kind = n % 4;
  const [tool, args]: [string, Record<string, unknown>] =
    kind === 0
      ? [
          'create_user',
          {
            userName: `${prefix}-${worker}-${n}`,
            password: 'Soak-Passw0rd!',
            givenName: 'Soak',
            familyName: `W${worker}`,
            email: `${prefix}-${worker}-${n}@example.com`,
          },
        ]
      : kind === 1
        ? ['search_users', { filter: 'userName sw a', count: 5 }]
        : kind === 2
          ? ['list_groups', { startIndex: 1, count: 10 }]
          : ['list_users', { startIndex: 1, count: 5 }];
  calls += 1;
  try {
    const outcome = await callToolThroughGateway(layout, accessToken, tool, args);
    const result = outcome.kind === 'result' ? outcome.result : undefined;
    const structured = result?.structuredContent as { id?: string; error?: unknown } | undefined;
    if (!result || result.isError || (structured?.error ?? null) !== null) {
      recordFailure(Date.now());
      return;
    }
    if (tool === 'create_user' && structured?.id) acknowledged.push(String(args.userName));
  } catch {
    recordFailure(Date.now());
  }
}

/** A worker pauses after a failure, as a client retrying would, instead of spinning on refusals. */
const PAUSE_AFTER_FAILURE_MS = 100;

async function worker(id: number): Promise<void> {
  for (let n = 0; !stopping; n++) {
    const before = failures;
    await oneCall(id, n);
    if (failures > before) await new Promise((r) => setTimeout(r, PAUSE_AFTER_FAILURE_MS));
  }
}

async function killer(): Promise<void> {
  // Half an interval first, so a run of N intervals sees N kills.
  let wait = KILL_EVERY_MS / 2;
  for (let turn = 0; !stopping; turn++, wait = KILL_EVERY_MS) {
    await new Promise((resolve) => setTimeout(resolve, wait));
    if (stopping) return;
    const name = SERVICES[turn % SERVICES.length] ?? 'gateway';
    const before = services().find((s) => s.name === name);
    if (!before?.pid) continue;
    const window: Window = { service: name, killedAt: Date.now(), failures: 0 };
    windows.push(window);
    process.kill(before.pid, 'SIGKILL');
    while (!stopping) {
      const now = services().find((s) => s.name === name);
      if (now?.state === 'running' && now.restarts > before.restarts) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    window.backAt = Date.now();
  }
}

const soakStart = Date.now();
const killing = killer();
const working = Promise.all(Array.from({ length: WORKERS }, (_, i) => worker(i)));
await new Promise((resolve) => setTimeout(resolve, MINUTES * 60_000));
stopping = true;
await working;
await killing;
const elapsed = (Date.now() - soakStart) / 1000;

// Every acknowledged create must still be at the IdP.
let lost = 0;
for (const userName of acknowledged) {
  const outcome = await callToolThroughGateway(layout, accessToken, 'search_users', {
    filter: `userName eq ${userName}`,
    count: 1,
  });
  const users =
    outcome.kind === 'result'
      ? (outcome.result.structuredContent as { users?: unknown[] | null }).users
      : undefined;
  if (users?.length !== 1) lost += 1;
}

await cli(['down', '--data-dir', dataDir]);
rmSync(dataDir, { recursive: true, force: true });

console.log(
  `soak: ${MINUTES} min, ${WORKERS} workers, a service killed every ${KILL_EVERY_MS / 1000} s`,
);
console.log(`calls made           ${calls} (${(calls / elapsed).toFixed(1)}/s)`);
console.log(
  `failed               ${failures} (${((100 * failures) / Math.max(calls, 1)).toFixed(2)} %)`,
);
for (const w of windows) {
  const down = w.backAt === undefined ? 'not back' : `back after ${w.backAt - w.killedAt} ms`;
  console.log(
    `  kill ${w.service.padEnd(8)} at +${((w.killedAt - soakStart) / 1000).toFixed(0)} s, ${down}: ${w.failures} failed in its window`,
  );
}
console.log(`failed outside restart windows  ${failuresOutside}`);
console.log(`IdP writes acknowledged ${acknowledged.length}, lost ${lost}`);
process.exitCode = lost === 0 && failuresOutside === 0 ? 0 : 1;
