/**
 * Soak (issues 36 and 37): the whole stack under `mcp-identity up --detach` (real supervisor,
 * real processes) takes mixed tool calls for N minutes, through the gateway (Area B) and
 * through Area A's own /mcp with an Area A token, while one service is killed (SIGKILL) every
 * interval, in turn. Every call is classified from what came back (kit/call-class.ts:
 * acknowledged, refused, failed, unknown) and counted in the kill window it ended in (kill →
 * the supervisor reports the service running again, plus a short grace). Afterwards every
 * create and delete is checked at the IdP itself: an acknowledged one must hold, a refused or
 * failed one must not have happened.
 *
 * Exit code 1 when an acknowledged write was lost, a write said not applied was applied, or a
 * call outside every kill window was not acknowledged.
 *
 *   npm run bench:soak
 *   npm run bench:soak -- --minutes 2 --kill-every 60 --workers 4 --area-a-workers 2
 *   npm run bench:soak -- --minutes 1 --kill-every 30 --kill idp,area-a
 */

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  clientCredentialsToken,
  readRunningStack,
  type ServiceStatus,
  type StackPorts,
  stackLayout,
} from '@mcp-identity/cli';
import { obtainTokenWithLoginForm } from '@mcp-identity/oauth';
import { type Classified, classifyOutcome } from './kit/call-class.js';
import { Cleanup } from './kit/cleanup.js';
import { usersWithPrefix } from './kit/idp-users.js';
import { benchArgs, numberOption } from './kit/options.js';
import {
  type Area,
  type CallRecord,
  checkWrites,
  type KillWindow,
  renderSoakReport,
  tallyWindows,
  type WriteRecord,
} from './kit/soak-report.js';
import { TokenKeeper } from './kit/token-keeper.js';
import { callTool, type ToolCallOutcome } from './kit/tool-call.js';

const args = benchArgs({
  minutes: { type: 'string', default: '10' },
  'kill-every': { type: 'string', default: '60' },
  workers: { type: 'string', default: '4' },
  'area-a-workers': { type: 'string', default: '2' },
  kill: { type: 'string', default: 'gateway,scim-mcp,idp,area-a' },
});
const MINUTES = numberOption('minutes', args.minutes, 0.1);
const KILL_EVERY_MS = numberOption('kill-every', args['kill-every'], 1) * 1000;
const WORKERS: Record<Area, number> = {
  B: numberOption('workers', args.workers, 1),
  A: numberOption('area-a-workers', args['area-a-workers'], 0),
};
/** Calls still failing this long after the service is back count against its window. */
const GRACE_MS = 2000;
/** A worker pauses after a call that was not acknowledged, as a client retrying would. */
const PAUSE_AFTER_FAILURE_MS = 100;
/** The services killed, in turn. */
const SERVICES = (args.kill as string).split(',').filter(Boolean);
for (const name of SERVICES) {
  if (!['gateway', 'scim-mcp', 'idp', 'area-a'].includes(name)) {
    process.stderr.write(`--kill takes gateway, scim-mcp, idp and area-a, not ${name}\n`);
    process.exit(2);
  }
}
const CLI = new URL('../../packages/cli/dist/bin.js', import.meta.url).pathname;
const AREA_B_SCOPES = [
  'internal_user_mgt_list',
  'internal_user_mgt_view',
  'internal_user_mgt_create',
  'internal_user_mgt_delete',
  'internal_group_mgt_view',
];

interface StackSecretsUsed {
  clientApp: { clientId: string; clientSecret: string };
  backendApp: { clientId: string; clientSecret: string };
  areaAccount: { email: string; password: string };
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

async function cli(command: string[]): Promise<number | null> {
  const child = spawn(process.execPath, [CLI, ...command], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const [code] = (await once(child, 'close')) as [number | null];
  return code;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const cleanup = new Cleanup();
const dataDir = mkdtempSync(join(tmpdir(), 'mcp-identity-soak-'));
cleanup.add(() => rmSync(dataDir, { recursive: true, force: true }));
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

try {
  const started = await cli(['up', '--detach', '--data-dir', dataDir, ...portFlags]);
  cleanup.add(() => cli(['down', '--data-dir', dataDir]));
  if (started !== 0) throw new Error(`up --detach failed (exit ${started})`);
  process.exitCode = await soak();
} finally {
  await cleanup.run();
}

async function soak(): Promise<number> {
  const layout = stackLayout(dataDir, ports);
  const secrets = JSON.parse(
    readFileSync(join(dataDir, 'stack-secrets.json'), 'utf8'),
  ) as StackSecretsUsed;
  const ca = readFileSync(layout.caFile, 'utf8');
  const services = (): ServiceStatus[] => readRunningStack(dataDir)?.services ?? [];

  const endpoints: Record<Area, { url: string; ca?: string; tokens: TokenKeeper }> = {
    B: {
      url: layout.gateway.mcpUrl,
      ca,
      tokens: new TokenKeeper(() =>
        clientCredentialsToken(layout, secrets.clientApp, AREA_B_SCOPES),
      ),
    },
    A: {
      url: layout.areaA.mcpUrl,
      tokens: new TokenKeeper(() =>
        obtainTokenWithLoginForm(layout.areaA.url, secrets.areaAccount),
      ),
    },
  };
  const areas = (['B', 'A'] as const).filter((area) => WORKERS[area] > 0);
  for (const area of areas) await endpoints[area].tokens.token();

  const prefix = `soak-${Date.now().toString(36)}`;
  const windows: KillWindow[] = [];
  const calls: CallRecord[] = [];
  const writes: WriteRecord[] = [];
  /** Users whose create was acknowledged and that no delete was sent for yet, per area. */
  const deletable: Record<Area, { userName: string; id: string }[]> = { A: [], B: [] };
  let stopping = false;

  async function oneCall(area: Area, worker: number, n: number): Promise<Classified> {
    const victim = n % 5 === 2 ? deletable[area].shift() : undefined;
    const userName = `${prefix}-${area.toLowerCase()}${worker}-${n}`;
    const [tool, toolArgs]: [string, Record<string, unknown>] =
      n % 5 === 0
        ? [
            'create_user',
            {
              userName,
              password: 'Soak-Passw0rd!',
              givenName: 'Soak',
              familyName: `W${worker}`,
              email: `${userName}@example.com`,
            },
          ]
        : victim
          ? ['delete_user', { userId: victim.id }]
          : n % 5 === 1
            ? ['search_users', { filter: 'userName sw a', count: 5 }]
            : n % 5 === 3
              ? ['list_groups', { startIndex: 1, count: 10 }]
              : ['list_users', { startIndex: 1, count: 5 }];
    const writesTo = tool === 'create_user' ? userName : victim?.userName;
    const endpoint = endpoints[area];
    let outcome: ToolCallOutcome;
    try {
      const token = await endpoint.tokens.token();
      outcome = await callTool(endpoint.url, token, tool, toolArgs, { ca: endpoint.ca });
    } catch (error) {
      outcome = { kind: 'not-sent', error: `no access token: ${(error as Error).message}` };
    }
    const classified = classifyOutcome(outcome, { writes: writesTo !== undefined });
    calls.push({ area, endedAt: Date.now(), ...classified });
    if (writesTo !== undefined) {
      writes.push({
        area,
        op: tool === 'create_user' ? 'create' : 'delete',
        userName: writesTo,
        class: classified.class,
      });
    }
    const created =
      outcome.kind === 'result' && tool === 'create_user' && classified.class === 'acknowledged'
        ? (outcome.result.structuredContent as { id?: unknown } | undefined)?.id
        : undefined;
    if (typeof created === 'string') deletable[area].push({ userName, id: created });
    return classified;
  }

  async function worker(area: Area, id: number): Promise<void> {
    for (let n = 0; !stopping; n++) {
      const { class: outcome } = await oneCall(area, id, n);
      if (outcome !== 'acknowledged') await sleep(PAUSE_AFTER_FAILURE_MS);
    }
  }

  async function killer(): Promise<void> {
    for (let turn = 0; !stopping && SERVICES.length > 0; turn++) {
      // In the middle of each interval, so a run of N intervals sees N kills.
      const at = startedAt + (turn + 0.5) * KILL_EVERY_MS;
      while (!stopping && Date.now() < at) await sleep(100);
      if (stopping) return;
      const name = SERVICES[turn % SERVICES.length] ?? 'gateway';
      const before = services().find((s) => s.name === name);
      if (!before?.pid) continue;
      const window: KillWindow = { service: name, killedAt: Date.now() };
      windows.push(window);
      process.kill(before.pid, 'SIGKILL');
      while (!stopping) {
        const now = services().find((s) => s.name === name);
        if (now?.state === 'running' && now.restarts > before.restarts) break;
        await sleep(50);
      }
      if (!stopping) window.backAt = Date.now();
    }
  }

  const startedAt = Date.now();
  const killing = killer();
  const working = Promise.all(
    areas.flatMap((area) => Array.from({ length: WORKERS[area] }, (_, i) => worker(area, i))),
  );
  await sleep(MINUTES * 60_000);
  stopping = true;
  await working;
  await killing;
  const elapsed = (Date.now() - startedAt) / 1000;

  // The last kill's service must be back before the IdP can be asked.
  const deadline = Date.now() + 120_000;
  while (services().some((s) => s.state !== 'running') && Date.now() < deadline) await sleep(100);
  const backend = await clientCredentialsToken(layout, secrets.backendApp, [
    'internal_user_mgt_list',
  ]);
  const existing = await usersWithPrefix(
    `${layout.idp.url}/scim2`,
    backend.accessToken,
    prefix,
    ca,
  );
  const check = checkWrites(writes, new Set(existing.keys()));
  const tallies = tallyWindows(calls, windows, areas, GRACE_MS);

  const workers = areas.map((area) => `area ${area} ${WORKERS[area]}`).join(', ');
  console.log(
    `soak: ${MINUTES} min, workers ${workers}, a service killed (SIGKILL) every ${KILL_EVERY_MS / 1000} s`,
  );
  console.log(`calls made ${calls.length} (${(calls.length / elapsed).toFixed(1)}/s)\n`);
  console.log(renderSoakReport(tallies, check, startedAt));

  const unexplained = tallies
    .filter((tally) => tally.window === undefined)
    .reduce((sum, tally) => sum + tally.counts.calls - tally.counts.acknowledged, 0);
  return check.lost.length === 0 && check.appliedAnyway.length === 0 && unexplained === 0 ? 0 : 1;
}
