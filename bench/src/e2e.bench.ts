/**
 * The whole stack end to end (issue 15): `search_users` tool calls through the gateway's HTTPS
 * listener → SCIM MCP server → identity provider (a new client-credentials token per call, then
 * the SCIM search), started the way `mcp-identity up` starts it, in a temp data directory on
 * ephemeral ports. At 1, 8 and 32 concurrent callers it prints calls/s and p50/p99, the CPU each
 * process spent per call (from /proc), and where a call's time goes: each leg is also called
 * directly in the same run at the same concurrency (the MCP server without the gateway, the token
 * request, the SCIM search), and the differences of the mean latencies are charged to each layer.
 *
 *
 * A second stack runs as `mcp-identity up --delegation` (issue 41: the gateway and the SCIM MCP
 * server exchange the caller's token at the IdP, RFC 8693), and its end-to-end leg, called by the
 * signed-in read-only user, takes turns with this tree's legs: each concurrency also prints the
 * delegated calls/s beside the default ones, from one run (`--no-delegation` leaves it out).
 * With `--baseline <dir>` (a built checkout of an older commit, see bench/README.md) that
 * commit's stack is started too, with its own CLI, and its end-to-end leg takes turns with this
 * tree's legs, so each concurrency also prints the calls/s ratio new/baseline from one run.
 * With `--profile <dir>` the services of this tree's stack run under `node --cpu-prof`, and one
 * more end-to-end run at the highest concurrency is summarised per service.
 *
 *   npm run bench:e2e
 *   npm run bench:e2e -- --seconds 10 --rounds 5 --concurrency 1,8,32,64 --filter 'userName eq alice'
 *   npm run bench:e2e -- --baseline /tmp/e2e-baseline
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { RunningStack, StackPorts } from '@mcp-identity/cli';
import * as currentCli from '@mcp-identity/cli';
import { Cleanup } from './kit/cleanup.js';
import { type Call, closedLoop, type LoopResult } from './kit/closed-loop.js';
import { formatProfileSummary, summariseCpuProfile } from './kit/cpu-profile.js';
import { MCP_HEADERS } from './kit/mcp-headers.js';
import { benchArgs, countsOption, numberOption } from './kit/options.js';
import { freePort } from './kit/ports.js';
import { processTree, treeCpuMs } from './kit/process-stats.js';
import { interleavedRounds } from './kit/rounds.js';
import { fixed, markdownTable } from './kit/table.js';

const args = benchArgs({
  seconds: { type: 'string', default: '5' },
  rounds: { type: 'string', default: '3' },
  warmup: { type: 'string', default: '2' },
  concurrency: { type: 'string', default: '1,8,32' },
  filter: { type: 'string', default: 'userName sw a' },
  count: { type: 'string', default: '5' },
  baseline: { type: 'string' },
  profile: { type: 'string' },
  'no-delegation': { type: 'boolean', default: false },
});
const SECONDS = numberOption('seconds', args.seconds, 1);
const WARMUP_SECONDS = numberOption('warmup', args.warmup);
const ROUNDS = numberOption('rounds', args.rounds, 1);
const CONCURRENCY = countsOption('concurrency', args.concurrency);
const SEARCH = { filter: args.filter as string, count: numberOption('count', args.count) };
const SCOPE = 'internal_user_mgt_list';
const PROFILE_PRELOAD = fileURLToPath(new URL('./e2e/cpu-profile-preload.cjs', import.meta.url));

type Service = 'gateway' | 'mcp' | 'idp';

/**
 * What the bench uses of a CLI package (`@mcp-identity/cli`, of this tree or of the baseline
 * checkout). The stack layout of older commits has no `caFile`: each service had its own
 * self-signed certificate then.
 */
interface StackCli {
  startStack: typeof currentCli.startStack;
  createProgress: typeof currentCli.createProgress;
  clientCredentialsToken: typeof currentCli.clientCredentialsToken;
}

interface StackUnderTest {
  cli: StackCli;
  stack: RunningStack;
  pids: Record<Service, number>;
  /** PEM the IdP's and the gateway's certificates chain to. */
  ca: { idp: string; gateway: string };
}

type LegName = 'e2e' | 'mcp' | 'token' | 'scim';

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

async function startStackUnderTest(
  cli: StackCli,
  cleanup: Cleanup,
  name: string,
  delegation = false,
): Promise<StackUnderTest> {
  const dataDir = mkdtempSync(join(tmpdir(), `e2e-bench-${name}-`));
  cleanup.add(() => rmSync(dataDir, { recursive: true, force: true }));
  const ports: StackPorts = {
    idp: await freePort(),
    mcp: await freePort(),
    gatewayHttps: await freePort(),
    gatewayHttp: await freePort(),
    gatewayManagement: await freePort(),
    areaA: await freePort(),
  };
  const stack = await cli.startStack({
    dataDir,
    ports,
    progress: cli.createProgress(process.stderr),
    ...(delegation && { delegation }),
  });
  cleanup.add(() => stack.stop());
  const { layout } = stack;
  const caFile = (layout as Partial<typeof layout>).caFile;
  return {
    cli,
    stack,
    pids: {
      gateway: stack.services.gateway.pid as number,
      mcp: stack.services.mcp.pid as number,
      idp: stack.services.idp.pid as number,
    },
    ca: {
      idp: readFileSync(caFile ?? layout.idp.certFile, 'utf8'),
      gateway: readFileSync(caFile ?? layout.gateway.certFile, 'utf8'),
    },
  };
}

/** The CLI of a built checkout of another commit (`--baseline`). */
async function baselineCli(dir: string): Promise<StackCli> {
  const entry = pathToFileURL(join(resolve(dir), 'packages/cli/dist/index.js')).href;
  try {
    return (await import(entry)) as StackCli;
  } catch (error) {
    throw new Error(
      `--baseline ${dir}: cannot load ${entry} (is it a built checkout? see bench/README.md): ${(error as Error).message}`,
    );
  }
}

async function gatewayLeg(under: StackUnderTest): Promise<Leg> {
  const { layout, secrets } = under.stack;
  const token = await under.cli.clientCredentialsToken(layout, secrets.clientApp, [SCOPE]);
  const gatewayUrl = new URL(layout.gateway.mcpUrl);
  return {
    origin: gatewayUrl.origin,
    ca: under.ca.gateway,
    call: searchUsersCall(gatewayUrl.pathname, { authorization: `Bearer ${token.accessToken}` }),
  };
}

/** The delegated stack's end-to-end leg: a person's token, exchanged by the gateway and the server. */
async function delegatedLeg(under: StackUnderTest): Promise<Leg> {
  const { layout, secrets } = under.stack;
  const token = await currentCli.userAccessToken(
    layout,
    secrets.clientApp,
    secrets.readOnlyUser,
    [SCOPE],
    layout.gateway.mcpUrl,
  );
  const gatewayUrl = new URL(layout.gateway.mcpUrl);
  return {
    origin: gatewayUrl.origin,
    ca: under.ca.gateway,
    call: searchUsersCall(gatewayUrl.pathname, { authorization: `Bearer ${token}` }),
  };
}

async function legs(under: StackUnderTest): Promise<Record<LegName, Leg>> {
  const { layout, secrets } = under.stack;
  const stackCa = under.ca.idp;
  const backendToken = await under.cli.clientCredentialsToken(layout, secrets.backendApp, [SCOPE]);
  const mcpUrl = new URL(layout.mcp.mcpUrl);
  return {
    e2e: await gatewayLeg(under),
    mcp: {
      origin: mcpUrl.origin,
      call: searchUsersCall(mcpUrl.pathname, await upstreamCredential(under.stack)),
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

/** `concurrency` callers on the leg for `seconds` (a closed loop). */
function runLeg(leg: Leg, concurrency: number, seconds: number): Promise<LoopResult> {
  return closedLoop(leg.origin, leg.ca ? { ca: leg.ca } : {}, leg.call, { concurrency, seconds });
}

async function measure(
  leg: Leg,
  concurrency: number,
  pids: Record<Service, number>,
  warmUp: boolean,
): Promise<Measured> {
  if (warmUp && WARMUP_SECONDS > 0) await runLeg(leg, concurrency, WARMUP_SECONDS);
  const services = Object.entries(pids) as [Service, number][];
  const before = services.map(([, pid]) => treeCpuMs(pid));
  const result = await runLeg(leg, concurrency, SECONDS);
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

/** CPU ms per call of the three services together (NaN when one was not measured). */
function stackCpuMs(cpu: Measured['cpuMsPerCall']): number {
  return (cpu.gateway ?? Number.NaN) + (cpu.mcp ?? Number.NaN) + (cpu.idp ?? Number.NaN);
}

interface Measurable {
  leg: Leg;
  pids: Record<Service, number>;
}

/**
 * The legs take turns, round after round, so load from elsewhere on the machine falls on all of
 * them alike; each leg reports its median round (by calls/s).
 */
async function measureLegs<Name extends string>(
  legsToMeasure: Partial<Record<Name, Measurable>>,
  concurrency: number,
): Promise<Partial<Record<Name, Measured>>> {
  const entries = Object.entries(legsToMeasure) as [Name, Measurable | undefined][];
  const names = entries.filter(([, leg]) => leg !== undefined).map(([name]) => name);
  const medians = await interleavedRounds(
    names,
    ROUNDS,
    (name, round) => {
      const { leg, pids } = legsToMeasure[name] as Measurable;
      return measure(leg, concurrency, pids, round === 0);
    },
    (m) => m.callsPerSecond,
  );
  return Object.fromEntries(medians) as Partial<Record<Name, Measured>>;
}

/**
 * One more end-to-end run at `concurrency` on a stack whose services run under `node --cpu-prof`;
 * the profiles are written when the services exit, so the stack is stopped here.
 */
async function profileRun(
  under: StackUnderTest,
  leg: Leg,
  concurrency: number,
  profileDir: string,
): Promise<void> {
  const nowUs = () => Number(process.hrtime.bigint() / 1000n);
  const fromUs = nowUs();
  const result = await runLeg(leg, concurrency, SECONDS);
  const toUs = nowUs();
  // Gateway workers are children of the service's process: each writes its own profile.
  const trees = Object.entries(under.pids).map(
    ([service, pid]) => [service, processTree(pid)] as const,
  );
  await under.stack.stop();
  console.log(
    `\nCPU profiles (${profileDir}) of one ${SECONDS} s end-to-end run at ${concurrency} callers: ${result.callsPerSecond.toFixed(0)} calls/s`,
  );
  const written = new Set(readdirSync(profileDir));
  for (const [service, pids] of trees) {
    for (const pid of pids) {
      const file = `${pid}.cpuprofile`;
      if (!written.has(file)) {
        console.log(`\n${service} (pid ${pid}): no profile written`);
        continue;
      }
      const summary = summariseCpuProfile(join(profileDir, file), {
        top: 25,
        window: { fromUs, toUs },
      });
      console.log(
        `\n### ${service} (pid ${pid}): ${((summary.busyMs / result.calls) * 1000).toFixed(0)} µs busy per call\n${formatProfileSummary(summary)}`,
      );
    }
  }
}

async function main(): Promise<void> {
  const cleanup = new Cleanup();
  try {
    // Loaded first, so a wrong --baseline fails before anything starts.
    const oldCli = args.baseline ? await baselineCli(args.baseline) : undefined;
    const profileDir = args.profile ? resolve(args.profile) : undefined;
    const nodeOptions = process.env.NODE_OPTIONS;
    if (profileDir) {
      mkdirSync(profileDir, { recursive: true });
      process.env.E2E_BENCH_PROFILE_DIR = profileDir;
      process.env.NODE_OPTIONS = `${nodeOptions ?? ''} --require ${PROFILE_PRELOAD}`;
    }
    const current = await startStackUnderTest(currentCli, cleanup, 'current');
    // Only this tree's services are profiled (the supervisor passes its environment on).
    delete process.env.E2E_BENCH_PROFILE_DIR;
    if (nodeOptions === undefined) delete process.env.NODE_OPTIONS;
    else process.env.NODE_OPTIONS = nodeOptions;
    const baseline = oldCli ? await startStackUnderTest(oldCli, cleanup, 'baseline') : undefined;
    const calls = await legs(current);
    const baselineLeg = baseline ? await gatewayLeg(baseline) : undefined;
    const delegated = args['no-delegation']
      ? undefined
      : await startStackUnderTest(currentCli, cleanup, 'delegated', true);
    const delegatedCall = delegated ? await delegatedLeg(delegated) : undefined;
    console.log(
      `search_users ${JSON.stringify(SEARCH)} through the gateway's HTTPS listener; median of ${ROUNDS} interleaved rounds of ${SECONDS} s per leg, after ${WARMUP_SECONDS} s warm-up; ${availableParallelism()} cores; node ${process.version}; load average at start ${(loadavg()[0] as number).toFixed(2)}`,
    );
    const throughput: string[][] = [];
    const breakdown: string[][] = [];
    const timings: string[] = [];
    const versus: string[][] = [];
    const sideBySide: string[][] = [];
    const own = (leg: Leg): Measurable => ({ leg, pids: current.pids });
    for (const concurrency of CONCURRENCY) {
      const measured = await measureLegs<LegName | 'baseline' | 'delegated'>(
        {
          e2e: own(calls.e2e),
          mcp: own(calls.mcp),
          token: own(calls.token),
          scim: own(calls.scim),
          baseline: baseline && baselineLeg ? { leg: baselineLeg, pids: baseline.pids } : undefined,
          delegated:
            delegated && delegatedCall ? { leg: delegatedCall, pids: delegated.pids } : undefined,
        },
        concurrency,
      );
      const [e2e, mcp, token, scim] = (['e2e', 'mcp', 'token', 'scim'] as const).map(
        (name) => measured[name] as Measured,
      ) as [Measured, Measured, Measured, Measured];
      const base = measured.baseline;
      if (base) {
        const baseCpu = base.cpuMsPerCall;
        versus.push([
          String(concurrency),
          e2e.callsPerSecond.toFixed(0),
          base.callsPerSecond.toFixed(0),
          `${(e2e.callsPerSecond / base.callsPerSecond).toFixed(2)}×`,
          fixed(base.p50Ms, 1),
          fixed(base.p99Ms, 1),
          fixed(stackCpuMs(baseCpu), 2),
          fixed(baseCpu.gateway, 2),
          fixed(baseCpu.mcp, 2),
          fixed(baseCpu.idp, 2),
        ]);
      }
      const onBehalf = measured.delegated;
      if (onBehalf) {
        const cpu = onBehalf.cpuMsPerCall;
        sideBySide.push([
          String(concurrency),
          e2e.callsPerSecond.toFixed(0),
          onBehalf.callsPerSecond.toFixed(0),
          `${(onBehalf.callsPerSecond / e2e.callsPerSecond).toFixed(2)}×`,
          fixed(onBehalf.p50Ms, 1),
          fixed(onBehalf.p99Ms, 1),
          fixed(stackCpuMs(cpu), 2),
          fixed(cpu.gateway, 2),
          fixed(cpu.mcp, 2),
          fixed(cpu.idp, 2),
        ]);
      }
      const cpu = e2e.cpuMsPerCall;
      const total = stackCpuMs(cpu);
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
    if (sideBySide.length > 0) {
      console.log(
        '\ndefault vs delegated (a second stack, `up --delegation`: the signed-in read-only user, the gateway exchanging once per caller token, the SCIM MCP server once per call), measured in the same rounds',
      );
      console.log(
        markdownTable(
          [
            'callers',
            'default calls/s',
            'delegated calls/s',
            'ratio',
            'delegated p50 ms',
            'delegated p99 ms',
            'delegated CPU ms/call',
            'gateway',
            'MCP server',
            'IdP',
          ],
          sideBySide,
        ),
      );
    }
    if (versus.length > 0) {
      console.log(
        `\nagainst the baseline stack (${args.baseline}), its end-to-end leg measured in the same rounds`,
      );
      console.log(
        markdownTable(
          [
            'callers',
            'calls/s',
            'baseline calls/s',
            'ratio',
            'baseline p50 ms',
            'baseline p99 ms',
            'baseline CPU ms/call',
            'gateway',
            'MCP server',
            'IdP',
          ],
          versus,
        ),
      );
    }
    console.log(`load average at end ${(loadavg()[0] as number).toFixed(2)}`);
    if (profileDir) {
      await profileRun(current, calls.e2e, Math.max(...CONCURRENCY), profileDir);
    }
  } finally {
    await cleanup.run();
  }
}

await main();
