/**
 * The whole stack end to end (issue 15): `search_users` tool calls through the gateway's HTTPS
 * listener → SCIM MCP server → identity provider (a new client-credentials token per call, then
 * the SCIM search), started the way `mcp-identity up` starts it, in a temp data directory on
 * ephemeral ports. At 1, 8 and 32 concurrent callers it prints calls/s and p50/p99, the CPU each
 * process spent per call (from /proc), and where a call's time goes: each leg is also called
 * directly in the same run at the same concurrency (the MCP server without the gateway, the token
 * request, the SCIM search), and the differences of the mean latencies are charged to each layer.
 *
 *   npm run bench:e2e
 *   npm run bench:e2e -- --seconds 10 --rounds 5 --concurrency 1,8,32,64 --filter 'userName eq alice'
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  clientCredentialsToken,
  createProgress,
  type RunningStack,
  type StackPorts,
  startStack,
} from '@mcp-identity/cli';
import { Cleanup } from './kit/cleanup.js';
import { type Call, closedLoop, type LoopResult } from './kit/closed-loop.js';
import { MCP_HEADERS } from './kit/mcp-headers.js';
import { benchArgs, countsOption, numberOption } from './kit/options.js';
import { freePort } from './kit/ports.js';
import { treeCpuMs } from './kit/process-stats.js';
import { fixed, markdownTable } from './kit/table.js';

const args = benchArgs({
  seconds: { type: 'string', default: '5' },
  rounds: { type: 'string', default: '3' },
  warmup: { type: 'string', default: '2' },
  concurrency: { type: 'string', default: '1,8,32' },
  filter: { type: 'string', default: 'userName sw a' },
  count: { type: 'string', default: '5' },
});
const SECONDS = numberOption('seconds', args.seconds, 1);
const WARMUP_SECONDS = numberOption('warmup', args.warmup);
const ROUNDS = numberOption('rounds', args.rounds, 1);
const CONCURRENCY = countsOption('concurrency', args.concurrency);
const SEARCH = { filter: args.filter as string, count: numberOption('count', args.count) };
const SCOPE = 'internal_user_mgt_list';

type Service = 'gateway' | 'mcp' | 'idp';

interface Leg {
  origin: string;
  ca?: string;
  call: Call;
}

interface Measured extends LoopResult {
  cpuMsPerCall: Partial<Record<Service, number>>;
}

function searchUsersCall(path: string, headers: Record<string, string>): Call {
  return {
    path,
    method: 'POST',
    headers: { ...MCP_HEADERS, ...headers },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'search_users', arguments: SEARCH },
    }),
    check(status, body) {
      if (status !== 200) throw new Error(`search_users: HTTP ${status}: ${body.slice(0, 300)}`);
      const message = JSON.parse(body) as {
        result?: { isError?: boolean; structuredContent?: { error?: unknown } };
        error?: unknown;
      };
      const result = message.result;
      if (!result || result.isError || (result.structuredContent?.error ?? null) !== null) {
        throw new Error(`search_users failed: ${body.slice(0, 300)}`);
      }
    },
  };
}

function basic(client: { clientId: string; clientSecret: string }): string {
  const pair = `${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`;
  return `Basic ${Buffer.from(pair).toString('base64')}`;
}

/**
 * The header the gateway adds for the MCP server (issue 14), read the way the gateway resolves
 * it, so the MCP server can be called directly; none when the proxy has no upstream credential.
 */
async function upstreamCredential(stack: RunningStack): Promise<Record<string, string>> {
  const { layout, secrets } = stack;
  const response = await fetch(
    `${layout.gateway.managementUrl}/api/management/v1/mcp-proxies/scim-v1.0`,
    {
      headers: {
        authorization: basic({
          clientId: secrets.gatewayAdmin.username,
          clientSecret: secrets.gatewayAdmin.password,
        }),
      },
    },
  );
  if (!response.ok) throw new Error(`reading the /scim proxy failed: HTTP ${response.status}`);
  const proxy = (await response.json()) as {
    spec?: { upstream?: { auth?: { header: string; secretRef: string } } };
  };
  const auth = proxy.spec?.upstream?.auth;
  if (!auth) return {};
  const [kind, ref] = [
    auth.secretRef.slice(0, auth.secretRef.indexOf(':')),
    auth.secretRef.slice(auth.secretRef.indexOf(':') + 1),
  ];
  const secret =
    kind === 'file' ? readFileSync(ref, 'utf8').split('\n')[0]?.trim() : process.env[ref];
  if (!secret) throw new Error(`cannot resolve the upstream credential ${auth.secretRef}`);
  return { [auth.header]: secret };
}

async function legs(stack: RunningStack): Promise<Record<'e2e' | 'mcp' | 'token' | 'scim', Leg>> {
  const { layout, secrets } = stack;
  // The stack's local CA issues both the IdP's and the gateway's certificates.
  const stackCa = readFileSync(layout.caFile, 'utf8');
  const gatewayToken = await clientCredentialsToken(layout, secrets.clientApp, [SCOPE]);
  const backendToken = await clientCredentialsToken(layout, secrets.backendApp, [SCOPE]);
  const gatewayUrl = new URL(layout.gateway.mcpUrl);
  const mcpUrl = new URL(layout.mcp.mcpUrl);
  return {
    e2e: {
      origin: gatewayUrl.origin,
      ca: stackCa,
      call: searchUsersCall(gatewayUrl.pathname, {
        authorization: `Bearer ${gatewayToken.accessToken}`,
      }),
    },
    mcp: {
      origin: mcpUrl.origin,
      call: searchUsersCall(mcpUrl.pathname, await upstreamCredential(stack)),
    },
    // What the MCP server asks the IdP for on every tool call (no token cache by default).
    token: {
      origin: layout.idp.url,
      ca: stackCa,
      call: {
        path: new URL(layout.idp.tokenUrl).pathname,
        method: 'POST',
        headers: {
          authorization: basic(secrets.backendApp),
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope: SCOPE }).toString(),
        check(status, body) {
          if (status !== 200 || !body.includes('access_token')) {
            throw new Error(`token request: HTTP ${status}`);
          }
        },
      },
    },
    // The request search_users sends (workflows/scim: POST /Users/.search).
    scim: {
      origin: layout.idp.url,
      ca: stackCa,
      call: {
        path: '/scim2/Users/.search',
        method: 'POST',
        headers: {
          authorization: `Bearer ${backendToken.accessToken}`,
          'content-type': 'application/scim+json',
          accept: 'application/scim+json',
        },
        body: JSON.stringify({
          schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'],
          ...SEARCH,
        }),
        check(status, body) {
          if (status !== 200) throw new Error(`SCIM search: HTTP ${status}: ${body.slice(0, 300)}`);
        },
      },
    },
  };
}

async function measure(
  leg: Leg,
  concurrency: number,
  pids: Record<Service, number>,
  warmUp: boolean,
): Promise<Measured> {
  const loop = { concurrency, seconds: SECONDS };
  const tls = leg.ca ? { ca: leg.ca } : {};
  if (warmUp && WARMUP_SECONDS > 0)
    await closedLoop(leg.origin, tls, leg.call, { ...loop, seconds: WARMUP_SECONDS });
  const services = Object.entries(pids) as [Service, number][];
  const before = services.map(([, pid]) => treeCpuMs(pid));
  const result = await closedLoop(leg.origin, tls, leg.call, loop);
  const cpuMsPerCall: Partial<Record<Service, number>> = {};
  services.forEach(([service, pid], i) => {
    const after = treeCpuMs(pid);
    const start = before[i];
    if (after !== undefined && start !== undefined) {
      cpuMsPerCall[service] = (after - start) / result.calls;
    }
  });
  return { ...result, cpuMsPerCall };
}

/**
 * The four legs take turns, round after round, so load from elsewhere on the machine falls on
 * all of them alike; each leg reports its median round (by calls/s).
 */
async function measureLegs(
  calls: Record<'e2e' | 'mcp' | 'token' | 'scim', Leg>,
  concurrency: number,
  pids: Record<Service, number>,
): Promise<Record<'e2e' | 'mcp' | 'token' | 'scim', Measured>> {
  const names = ['e2e', 'mcp', 'token', 'scim'] as const;
  const rounds = new Map<string, Measured[]>(names.map((name) => [name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of names) {
      rounds.get(name)?.push(await measure(calls[name], concurrency, pids, round === 0));
    }
  }
  const median = (name: string) => {
    const sorted = [...(rounds.get(name) ?? [])].sort(
      (a, b) => a.callsPerSecond - b.callsPerSecond,
    );
    return sorted[Math.floor((sorted.length - 1) / 2)] as Measured;
  };
  return { e2e: median('e2e'), mcp: median('mcp'), token: median('token'), scim: median('scim') };
}

async function main(): Promise<void> {
  const cleanup = new Cleanup();
  const dataDir = mkdtempSync(join(tmpdir(), 'e2e-bench-'));
  cleanup.add(() => rmSync(dataDir, { recursive: true, force: true }));
  try {
    const ports: StackPorts = {
      idp: await freePort(),
      mcp: await freePort(),
      gatewayHttps: await freePort(),
      gatewayHttp: await freePort(),
      gatewayManagement: await freePort(),
      areaA: await freePort(),
    };
    const stack = await startStack({ dataDir, ports, progress: createProgress(process.stderr) });
    cleanup.add(() => stack.stop());
    const pids = {
      gateway: stack.services.gateway.pid as number,
      mcp: stack.services.mcp.pid as number,
      idp: stack.services.idp.pid as number,
    };
    const calls = await legs(stack);
    console.log(
      `search_users ${JSON.stringify(SEARCH)} through the gateway's HTTPS listener; median of ${ROUNDS} interleaved rounds of ${SECONDS} s per leg, after ${WARMUP_SECONDS} s warm-up; ${availableParallelism()} cores; node ${process.version}; load average at start ${(loadavg()[0] as number).toFixed(2)}`,
    );
    const throughput: string[][] = [];
    const breakdown: string[][] = [];
    const timings: string[] = [];
    for (const concurrency of CONCURRENCY) {
      const { e2e, mcp, token, scim } = await measureLegs(calls, concurrency, pids);
      const cpu = e2e.cpuMsPerCall;
      const total = (cpu.gateway ?? Number.NaN) + (cpu.mcp ?? Number.NaN) + (cpu.idp ?? Number.NaN);
      throughput.push([
        String(concurrency),
        e2e.callsPerSecond.toFixed(0),
        fixed(e2e.p50Ms, 1),
        fixed(e2e.p99Ms, 1),
        fixed(total, 2),
        fixed(cpu.gateway, 2),
        fixed(cpu.mcp, 2),
        fixed(cpu.idp, 2),
        fixed(token.cpuMsPerCall.idp, 2),
        fixed(scim.cpuMsPerCall.idp, 2),
      ]);
      breakdown.push([
        String(concurrency),
        fixed(e2e.meanMs, 2),
        fixed(e2e.meanMs - mcp.meanMs, 2),
        fixed(mcp.meanMs - token.meanMs - scim.meanMs, 2),
        fixed(token.meanMs, 2),
        fixed(scim.meanMs, 2),
        mcp.callsPerSecond.toFixed(0),
        token.callsPerSecond.toFixed(0),
        scim.callsPerSecond.toFixed(0),
      ]);
      for (const [name, measured] of [
        ['through the gateway', e2e],
        ['MCP server direct', mcp],
      ] as const) {
        if (measured.serverTiming.size > 0) {
          const entries = [...measured.serverTiming].map(
            ([metric, ms]) => `${metric} ${ms.toFixed(2)} ms`,
          );
          timings.push(`${concurrency} callers, ${name}: ${entries.join(', ')}`);
        }
      }
    }
    console.log(
      '\nthroughput and CPU per call (CPU of each process tree during the end-to-end run / calls)',
    );
    console.log(
      markdownTable(
        [
          'callers',
          'calls/s',
          'p50 ms',
          'p99 ms',
          'CPU ms/call',
          'gateway',
          'MCP server',
          'IdP',
          'IdP per token',
          'IdP per search',
        ],
        throughput,
      ),
    );
    console.log(
      "\nwhere a call's time goes (mean ms; each leg also measured alone at the same concurrency: gateway = end to end − MCP server direct; MCP server = direct − token − SCIM)",
    );
    console.log(
      markdownTable(
        [
          'callers',
          'end to end',
          'gateway',
          'MCP server',
          'token',
          'SCIM search',
          'MCP direct calls/s',
          'tokens/s',
          'searches/s',
        ],
        breakdown,
      ),
    );
    console.log(
      timings.length > 0
        ? `\nServer-Timing (mean dur):\n${timings.map((t) => `- ${t}`).join('\n')}`
        : '\nno Server-Timing headers in the answers',
    );
    console.log(`load average at end ${(loadavg()[0] as number).toFixed(2)}`);
  } finally {
    await cleanup.run();
  }
}

await main();
