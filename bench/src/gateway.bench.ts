/**
 * The gateway's own cost, measured against a fast upstream in one run (issue 15).
 *
 * Rows: direct to the upstream (a minimal node:http server, and nginx `return 200` when Debian's
 * nginx is installed), nginx as a plain reverse proxy (1 worker, and one per core), the least a
 * Node.js proxy does (`node:http` + undici `dispatch`, no routing, policy or log) and, with
 * `--lower-bounds`, two relays below it (bytes relayed with no HTTP read; HTTP framed by hand
 * with nothing checked), the gateway without policies, and with mcp-auth + mcp-authz on a warm
 * and on a cold verified-token cache (`cachemaxsize = 0`: every request verifies an RS256
 * signature), and the warm case's same call as an MCP 2026-07-28 request (authorized from its
 * mirrored headers before the body is read), with a line comparing its CPU per request with the
 * legacy call's, and the warm case with OpenTelemetry tracing on (spans exported over OTLP/HTTP
 * to a receiver in this process that answers at once), with a line comparing its CPU per request
 * with the same case on a gateway of its own with tracing off (the default); `--before-bin` adds
 * the same case from another build (the one before a change) to compare the default with. Each at 10
 * and 64 keep-alive connections; req/s, p50/p99, CPU per request of the
 * proxy's process tree (from /proc), and the ratios: share of direct, share of nginx-as-proxy,
 * added p50.
 *
 *   npm run bench:gateway
 *   npm run bench:gateway -- --seconds 10 --rounds 5 --connections 10,64,128 --client autocannon
 *   npm run bench:gateway -- --workers 2      # also rows for `gateway serve --workers 2`
 *   npm run bench:gateway -- --lower-bounds   # also a Node.js TCP relay and a bare HTTP relay
 *   npm run bench:gateway -- --profile        # then a --cpu-prof run of the gateway, summarised
 *   npm run bench:gateway -- --profile-only --profile-case cold   # only that (warm, cold, open, modern)
 *   npm run bench:gateway -- --profile-only --profile-dir /tmp/prof  # keeps the .cpuprofile
 *   npm run bench:gateway -- --syscalls-only  # system calls per request (strace -c -f)
 *   npm run bench:gateway -- --perf-only      # on-CPU samples with kernel (perf record)
 *   npm run bench:gateway -- --instructions-only  # instructions per request, gateway vs nginx
 *   npm run bench:gateway -- --gateway-bin /tmp/old/dist/bin.js  # another build of the gateway
 *   npm run bench:gateway -- --before-bin /tmp/old/dist/bin.js   # also that build's warm row
 *   npm run bench:gateway -- --goal-cpu-ms 0.04 --goal-share-of-nginx 35  # also says met/missed
 */

import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { GOAL_OPTIONS, gatewayGoals, verdict } from './gateway-goals.js';
import { Cleanup } from './kit/cleanup.js';
import { formatProfileSummary, summariseCpuProfile } from './kit/cpu-profile.js';
import {
  MODERN_TOOL_CALL_BODY,
  type RunningProcess,
  spawnBareHttpRelay,
  spawnFastUpstream,
  spawnNodeProxy,
  spawnTcpRelay,
  TOOL_CALL_BODY,
  TOOL_RESULT_BODY,
} from './kit/fast-upstream.js';
import {
  cpuProfiles,
  DeployRefusedError,
  type GatewayProcess,
  startGatewayProcess,
  WorkersUnsupportedError,
} from './kit/gateway-process.js';
import {
  callgrindCommand,
  callgrindInstalled,
  dumpInstructions,
  zeroCounters,
} from './kit/instructions.js';
import {
  fixedRateLoad,
  type LoadClient,
  type LoadResult,
  pickLoadClient,
  runLoad,
} from './kit/load.js';
import { MCP_HEADERS, MODERN_MCP_HEADERS } from './kit/mcp-headers.js';
import { startNginx } from './kit/nginx.js';
import { benchArgs, countsOption, numberOption } from './kit/options.js';
import { perfInstalled, perfReport, recordPerf, removePerfMap } from './kit/perf-record.js';
import {
  connectionsPerProcess,
  samplePeakRss,
  treeCpuSplitMs,
  treeRssBytes,
  treeSleeps,
} from './kit/process-stats.js';
import { interleavedRounds } from './kit/rounds.js';
import { straceInstalled, traceSyscalls } from './kit/syscalls.js';
import { fixed, markdownTable, percent, times } from './kit/table.js';

const args = benchArgs({
  seconds: { type: 'string', default: '5' },
  rounds: { type: 'string', default: '3' },
  warmup: { type: 'string', default: '2' },
  connections: { type: 'string', default: '10,64' },
  client: { type: 'string' },
  threads: { type: 'string', default: '1' },
  workers: { type: 'string' },
  'lower-bounds': { type: 'boolean', default: false },
  profile: { type: 'boolean', default: false },
  'profile-only': { type: 'boolean', default: false },
  'profile-case': { type: 'string', default: 'warm' },
  'profile-dir': { type: 'string' },
  syscalls: { type: 'boolean', default: false },
  'syscalls-only': { type: 'boolean', default: false },
  perf: { type: 'boolean', default: false },
  'perf-only': { type: 'boolean', default: false },
  instructions: { type: 'boolean', default: false },
  'instructions-only': { type: 'boolean', default: false },
  'instructions-warmup': { type: 'string', default: '5000' },
  'instructions-seconds': { type: 'string', default: '30' },
  'instructions-rate': { type: 'string', default: '50' },
  'gateway-bin': { type: 'string' },
  'before-bin': { type: 'string' },
  ...GOAL_OPTIONS,
});
const SECONDS = numberOption('seconds', args.seconds, 1);
const WARMUP_SECONDS = numberOption('warmup', args.warmup);
const ROUNDS = numberOption('rounds', args.rounds, 1);
const CONNECTIONS = countsOption('connections', args.connections);
const THREADS = numberOption('threads', args.threads, 1);
const WORKERS = args.workers === undefined ? undefined : numberOption('workers', args.workers, 1);
const INSTRUCTIONS_WARMUP = numberOption('instructions-warmup', args['instructions-warmup']);
const INSTRUCTIONS_SECONDS = numberOption('instructions-seconds', args['instructions-seconds'], 1);
const INSTRUCTIONS_RATE = numberOption('instructions-rate', args['instructions-rate'], 1);
const CORES = availableParallelism();
/** Every gateway row runs this build (a copy of an earlier `dist/`, say) instead of this tree's. */
const GATEWAY_BIN = args['gateway-bin'] === undefined ? {} : { bin: resolve(args['gateway-bin']) };
/** A build whose warm row runs beside this one's (`--before-bin`), to compare builds in one run. */
const BEFORE_BIN = args['before-bin'] === undefined ? undefined : resolve(args['before-bin']);
const GOALS = gatewayGoals(args);
const ISSUER = 'https://idp.bench/oauth2/token';
const AUDIENCE = 'bench-client';
const KEY_MANAGER = 'bench-idp';

interface Target {
  name: string;
  url: string;
  /** Whose CPU is charged to the row: the proxy's (or, for direct rows, the upstream's). */
  pid: number;
  headers?: Record<string, string>;
  /** The request body, when not the legacy `TOOL_CALL_BODY`. */
  body?: string;
  /** For the MCP 2026-07-28 row, the legacy row of the same gateway it is compared with. */
  legacyOf?: string;
  /** For a row compared with the warm row (tracing on, another build), that row's name. */
  comparedWith?: string;
  /** RSS right after start-up, before any load. */
  idleRss?: number | undefined;
  /** For a gateway row, its `--workers` count (undefined for one process). */
  workers?: number | undefined;
}

interface Measured extends LoadResult {
  cpuMsPerRequest: number | undefined;
  /** Share of that CPU time spent in the kernel (system calls, TCP on loopback). */
  kernelShare: number | undefined;
  /** Times an event loop of the row went to sleep, per request (`treeSleeps`). */
  sleepsPerRequest: number | undefined;
  /** The load's connections per process of the row, halfway through (`connectionsPerProcess`). */
  connectionSplit: number[] | undefined;
  peakRss: number | undefined;
}

/** JWKS endpoint plus one RS256 token it verifies; lives in this process (fetched once). */
async function startKeyManager(cleanup: Cleanup) {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwks = JSON.stringify({
    keys: [{ ...(await exportJWK(publicKey)), kid: 'bench-1', alg: 'RS256', use: 'sig' }],
  });
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' }).end(jwks);
  }).listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanup.add(() => new Promise((resolve) => server.close(resolve)));
  const token = await new SignJWT({ scope: 'internal_user_mgt_list', sub: 'bench' })
    .setProtectedHeader({ alg: 'RS256', kid: 'bench-1' })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setIssuedAt()
    .setExpirationTime('2h')
    .sign(privateKey);
  const jwksUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
  return { jwksUri, token };
}

/**
 * An OTLP/HTTP receiver that takes each export and answers 200 at once: what the traced row's
 * spans go to, so that its cost is the gateway's own, never a collector's back-pressure.
 */
async function startOtlpSink(cleanup: Cleanup): Promise<string> {
  let exports = 0;
  const server = createServer((request, response) => {
    request.resume();
    request.once('end', () => {
      exports += 1;
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  }).listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanup.add(
    () =>
      new Promise((resolve) => {
        if (exports === 0) console.log('note: the traced row exported nothing');
        server.closeAllConnections();
        server.close(resolve);
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/**
 * The MCP versions of the bench's proxies: the legacy calls', and on the proxy of the warm
 * case (and the `modern` instrumented case) the modern call's beside them.
 */
const LEGACY_ERA = ['2025-06-18'];
const BOTH_ERAS = [...LEGACY_ERA, '2026-07-28'];

/**
 * The one CEL condition of the condition row (issue 42): over the token and the arguments, so
 * it is evaluated on every call, after the body is read.
 */
const CONDITION = "call.arguments.count <= 100.0 && token.sub != ''";

function proxyDefinition(
  name: string,
  context: string,
  upstreamUrl: string,
  policies: boolean,
  specVersions = LEGACY_ERA,
  when?: string,
) {
  return {
    apiVersion: 'gateway.api-platform.vendor/v1',
    kind: 'Mcp',
    metadata: { name: `${name}-v1.0` },
    spec: {
      displayName: name,
      version: 'v1.0',
      context,
      specVersions,
      upstream: { url: upstreamUrl },
      policies: policies
        ? [
            {
              name: 'mcp-auth',
              version: 'v1',
              params: { issuers: [KEY_MANAGER], audiences: [AUDIENCE] },
            },
            {
              name: 'mcp-authz',
              version: 'v1',
              params: {
                tools: [
                  {
                    name: 'search_users',
                    scopes: { allOf: ['internal_user_mgt_list'] },
                    ...(when === undefined ? {} : { when }),
                  },
                ],
              },
            },
          ]
        : [],
    },
  };
}

/** Tool calls on `target` over `connections` connections, all but the duration. */
function toolCallLoad(target: Pick<Target, 'url' | 'headers' | 'body'>, connections: number) {
  return {
    url: target.url,
    connections,
    method: 'POST' as const,
    headers: { ...MCP_HEADERS, ...target.headers },
    body: target.body ?? TOOL_CALL_BODY,
    threads: THREADS,
  };
}

/**
 * Warms the path up, then measures it. Every round is warmed, not only the first (JIT,
 * keep-alive pools, caches): between its rounds a row waits while all the others run, a minute
 * and more, and a Node.js process that idled that long first pays to recover from it (V8's
 * memory reducer shrinks an idle process's young generation, the VM reclaims idle pages), which
 * is not what a steady load costs (measured in commit 4fbd473's bench/README.md, round 10).
 */
async function measure(client: LoadClient, target: Target, connections: number): Promise<Measured> {
  const spec = toolCallLoad(target, connections);
  if (WARMUP_SECONDS > 0) await runLoad(client, { ...spec, seconds: WARMUP_SECONDS });
  const cpuBefore = treeCpuSplitMs(target.pid);
  const sleepsBefore = treeSleeps(target.pid);
  const rss = samplePeakRss(target.pid);
  let connectionSplit: number[] | undefined;
  const port = Number(new URL(target.url).port);
  const halfway = setTimeout(() => {
    connectionSplit = connectionsPerProcess(target.pid, port);
  }, SECONDS * 500);
  const result = await runLoad(client, { ...spec, seconds: SECONDS });
  clearTimeout(halfway);
  const peakRss = rss.stop();
  const cpuAfter = treeCpuSplitMs(target.pid);
  const sleepsAfter = treeSleeps(target.pid);
  const sleepsPerRequest =
    sleepsBefore === undefined || sleepsAfter === undefined
      ? undefined
      : (sleepsAfter - sleepsBefore) / result.requests;
  let cpuMsPerRequest: number | undefined;
  let kernelShare: number | undefined;
  if (cpuBefore && cpuAfter) {
    const user = cpuAfter.userMs - cpuBefore.userMs;
    const system = cpuAfter.systemMs - cpuBefore.systemMs;
    cpuMsPerRequest = (user + system) / result.requests;
    kernelShare = user + system > 0 ? system / (user + system) : undefined;
  }
  return { ...result, cpuMsPerRequest, kernelShare, sleepsPerRequest, connectionSplit, peakRss };
}

async function main(): Promise<void> {
  const cleanup = new Cleanup();
  const dir = mkdtempSync(join(tmpdir(), 'gateway-bench-'));
  cleanup.add(() => rmSync(dir, { recursive: true, force: true }));
  try {
    await runBench(cleanup, dir);
  } finally {
    await cleanup.run();
  }
}

const DIRECT_NODE = 'direct: node:http upstream';
const DIRECT_NGINX = 'direct: nginx return 200';
const NGINX_1 = 'nginx proxy, 1 worker';
const NGINX_N = `nginx proxy, ${CORES} workers`;
/** The floor of a proxy in Node.js: `node:http` + undici `dispatch`, nothing else. */
const NODE_PROXY = 'node:http + undici proxy, nothing else';
/** The same floor as `node:cluster` workers, for the gateway's `--workers` rows. */
const nodeProxyWorkers = (workers: number) =>
  `node:http + undici proxy, ${workers} workers, nothing else`;
/**
 * Below the floor (`--lower-bounds`): what Node.js's sockets cost with no HTTP read, and what
 * HTTP framing by hand costs with nothing checked; neither is a proxy to run.
 */
const TCP_RELAY = 'lower bound: Node.js TCP relay, no HTTP';
/** The gateway's fast path: mcp-auth + mcp-authz on a warm verified-token cache. */
const WARM = 'auth+authz, warm cache';
/** The same call in the modern era, authorized from its headers before the body is read. */
const MODERN = 'MCP 2026-07-28';
/**
 * The warm case on a gateway of its own (one proxy, like the two below it), tracing off: the
 * default, which the traced row and the `--before-bin` build are compared with.
 */
const UNTRACED = 'auth+authz, warm cache, own process, tracing off';
/** The same with tracing on, exporting every span over OTLP/HTTP. */
const TRACED = 'auth+authz, warm cache, own process, tracing on (OTLP export)';
/** The warm case of the `--before-bin` build. */
const BEFORE = 'auth+authz, warm cache, own process, --before-bin build';
/** The warm case with one CEL condition on the tool's rule, beside it in the same run. */
const CONDITIONED = 'auth+authz, warm cache, one CEL condition';
const BARE_HTTP_RELAY = 'lower bound: HTTP/1.1 framed by hand, no checks';

async function runBench(cleanup: Cleanup, dir: string): Promise<void> {
  const client = await pickLoadClient(args.client);
  const loadAtStart = loadavg()[0] as number;
  const keyManager = await startKeyManager(cleanup);
  const started = <T extends RunningProcess | undefined>(process: T): T => {
    if (process) cleanup.add(() => process.stop());
    return process;
  };
  const keyManagerConfig = { name: KEY_MANAGER, issuer: ISSUER, jwksUri: keyManager.jwksUri };
  const auth = { authorization: `Bearer ${keyManager.token}` };

  const nodeUpstream = started(await spawnFastUpstream());
  const nginxUpstream = started(await startNginx({ kind: 'fixed', body: TOOL_RESULT_BODY }));
  // Proxies get the cheapest upstream there is, so that it is never what limits them.
  const upstream = nginxUpstream ?? nodeUpstream;
  const notes: string[] = [];
  if (!nginxUpstream) notes.push('nginx rows skipped: install Debian nginx for them');

  let workers = WORKERS;
  const only = ['profile-only', 'syscalls-only', 'perf-only', 'instructions-only'] as const;
  if (!only.some((option) => args[option])) {
    const targets: Target[] = [{ name: DIRECT_NODE, url: nodeUpstream.url, pid: nodeUpstream.pid }];
    if (nginxUpstream) {
      targets.push({ name: DIRECT_NGINX, url: nginxUpstream.url, pid: nginxUpstream.pid });
      for (const [name, count] of [
        [NGINX_1, 1],
        [NGINX_N, CORES],
      ] as const) {
        const nginx = started(
          await startNginx({ kind: 'proxy', upstreamUrl: upstream.url, workers: count }),
        );
        if (nginx) targets.push({ name, url: nginx.url, pid: nginx.pid });
      }
    }
    const nodeProxy = started(await spawnNodeProxy(upstream.url));
    targets.push({ name: NODE_PROXY, url: nodeProxy.url, pid: nodeProxy.pid });
    if (args['lower-bounds']) {
      for (const [name, spawnRelay] of [
        [TCP_RELAY, spawnTcpRelay],
        [BARE_HTTP_RELAY, spawnBareHttpRelay],
      ] as const) {
        const relay = started(await spawnRelay(upstream.url));
        targets.push({ name, url: relay.url, pid: relay.pid });
      }
    }
    if (workers !== undefined) {
      const cluster = started(await spawnNodeProxy(upstream.url, workers));
      targets.push({ name: nodeProxyWorkers(workers), url: cluster.url, pid: cluster.pid });
    }
    const gateways = {
      dir,
      keyManager: keyManagerConfig,
      auth,
      upstreamUrl: upstream.url,
      started,
      notes,
      otlpUrl: await startOtlpSink(cleanup),
    };
    targets.push(...(await gatewayTargets(gateways, undefined)));
    if (workers !== undefined) {
      try {
        targets.push(...(await gatewayTargets(gateways, workers)));
      } catch (error) {
        if (!(error instanceof WorkersUnsupportedError)) throw error;
        workers = undefined;
        notes.push(
          `gateway serve --workers ${WORKERS} was refused (${error.message}): rows skipped`,
        );
      }
    }
    console.log(
      `tools/call over plain HTTP/1.1 keep-alive; median of ${ROUNDS} interleaved rounds of ${SECONDS} s per row, each after ${WARMUP_SECONDS} s of warm-up; load client ${client}${client === 'wrk' ? ` (${THREADS} thread)` : ''}; ${CORES} cores; node ${process.version}; load average at start ${loadAtStart.toFixed(2)}`,
    );
    const baseline = nginxUpstream ? DIRECT_NGINX : DIRECT_NODE;
    console.log(
      `proxies forward to "${baseline}"; CPU/req is the row's proxy process tree (the upstream's for direct rows); "share of direct" compares with that upstream.`,
    );
    const fastPath: string[] = [];
    for (const connections of CONNECTIONS) {
      // Rows take turns, round after round, so load from elsewhere on the machine falls on all
      // of them alike; each row reports its median round (by req/s).
      const medians = await interleavedRounds(
        targets,
        ROUNDS,
        (target) => measure(client, target, connections),
        (m) => m.rps,
      );
      const results = new Map([...medians].map(([target, m]) => [target.name, m]));
      console.log(`\n${connections} connections`);
      console.log(resultTable(targets, results, baseline));
      fastPath.push(...fastPathLines(connections, targets, results, baseline));
      fastPath.push(...eraLines(connections, targets, results));
      fastPath.push(...comparedLines(connections, targets, results));
    }
    if (client === 'wrk') fastPath.push(...(await lightLoadLatency(targets, baseline)));
    else notes.push('latency under light load skipped: it needs wrk');
    console.log('\nfast path (auth+authz, warm cache), and MCP 2026-07-28 against legacy:');
    for (const line of fastPath) console.log(`- ${line}`);
    for (const note of notes) console.log(`note: ${note}`);
    console.log(`load average at end ${(loadavg()[0] as number).toFixed(2)}`);
  }

  const instrumented = { upstreamUrl: upstream.url, keyManager: keyManagerConfig, auth, workers };
  if (args.profile || args['profile-only']) {
    await instrumentGateway(client, dir, instrumented, 'cpu-prof');
  }
  if (args.perf || args['perf-only']) {
    if (perfInstalled()) await instrumentGateway(client, dir, instrumented, 'perf');
    else console.log('note: --perf needs Linux perf (apt-get install linux-perf)');
  }
  if (args.syscalls || args['syscalls-only']) {
    if (straceInstalled()) await instrumentGateway(client, dir, instrumented, 'strace');
    else console.log('note: --syscalls needs strace (apt-get install strace)');
  }
  if (args.instructions || args['instructions-only']) {
    if (!nginxUpstream) console.log('note: --instructions needs Debian nginx');
    else if (!callgrindInstalled()) {
      console.log('note: --instructions needs valgrind (apt-get install valgrind)');
    } else await countInstructions(client, dir, instrumented);
  }
}

/**
 * Two gateway processes: one with a proxy without policies and one with mcp-auth + mcp-authz
 * (warm token cache), called in both eras, one with `cachemaxsize = 0` and the mcp-auth +
 * mcp-authz proxy (cold).
 */
async function gatewayTargets(
  setup: {
    dir: string;
    keyManager: { name: string; issuer: string; jwksUri: string };
    auth: Record<string, string>;
    upstreamUrl: string;
    started: <T extends RunningProcess>(process: T) => T;
    notes: string[];
    /** Where the traced row exports its spans. */
    otlpUrl: string;
  },
  workers: number | undefined,
): Promise<Target[]> {
  const label = workers === undefined ? '' : ` --workers ${workers}`;
  const start = async (
    name: string,
    tokenCacheEntries?: number,
    more: { env?: Record<string, string>; bin?: string } = {},
  ) => {
    const path = join(setup.dir, `${name}${workers ?? ''}`);
    const gateway = setup.started(
      await startGatewayProcess({
        ...GATEWAY_BIN,
        ...more,
        dir: path,
        keyManager: setup.keyManager,
        tokenCacheEntries,
        workers,
      }),
    );
    return { gateway, idleRss: treeRssBytes(gateway.pid) };
  };
  const warm = await start('warm');
  const probe = (path: string, auth: Record<string, string>) => ({ path, ...legacyCall(auth) });
  await warm.gateway.deploy(
    proxyDefinition('open', '/open', setup.upstreamUrl, false),
    probe('/open/mcp', {}),
  );
  const modernLeftOut = await deployBothEras(warm.gateway, setup.upstreamUrl, setup.auth);
  if (modernLeftOut) setup.notes.push(`${MODERN} row${label} left out: ${modernLeftOut}`);
  const conditionLeftOut = await deployConditioned(warm.gateway, setup.upstreamUrl, setup.auth);
  if (conditionLeftOut) {
    setup.notes.push(`${CONDITIONED} row${label} left out: ${conditionLeftOut}`);
  }
  const cold = await start('cold', 0);
  await cold.gateway.deploy(
    proxyDefinition('bench', '/bench', setup.upstreamUrl, true),
    probe('/bench/mcp', setup.auth),
  );
  const target = (
    name: string,
    at: typeof warm,
    path: string,
    request: Pick<Target, 'headers' | 'body' | 'legacyOf' | 'comparedWith'> = {},
  ): Target => ({
    name: `gateway${label}, ${name}`,
    url: `${at.gateway.plainUrl}${path}`,
    pid: at.gateway.pid,
    idleRss: at.idleRss,
    workers,
    ...request,
  });
  const legacy = target(WARM, warm, '/bench/mcp', { headers: setup.auth });
  // The same proxy on gateways of their own, each serving it alone: tracing off, tracing on (the
  // standard environment, batches as often as the SDK's default), and the `--before-bin` build.
  const warmTwin = async (name: string, more: { env?: Record<string, string>; bin?: string }) => {
    const twin = await start(name, undefined, more);
    await twin.gateway.deploy(
      proxyDefinition('bench', '/bench', setup.upstreamUrl, true),
      probe('/bench/mcp', setup.auth),
    );
    return twin;
  };
  const untraced = target(UNTRACED, await warmTwin('untraced', {}), '/bench/mcp', {
    headers: setup.auth,
  });
  const traced = await warmTwin('traced', { env: { OTEL_EXPORTER_OTLP_ENDPOINT: setup.otlpUrl } });
  const compared = [
    untraced,
    target(TRACED, traced, '/bench/mcp', { headers: setup.auth, comparedWith: untraced.name }),
  ];
  if (BEFORE_BIN !== undefined) {
    const before = await warmTwin('before', { bin: BEFORE_BIN });
    compared.push(
      target(BEFORE, before, '/bench/mcp', { headers: setup.auth, comparedWith: untraced.name }),
    );
  }
  const modern = target(`${WARM}, ${MODERN}`, warm, '/bench/mcp', {
    ...modernCall(setup.auth),
    legacyOf: legacy.name,
  });
  return [
    target('no policies', warm, '/open/mcp'),
    legacy,
    ...(modernLeftOut ? [] : [modern]),
    ...(conditionLeftOut
      ? []
      : [target(CONDITIONED, warm, '/conditioned/mcp', { headers: setup.auth })]),
    target('auth+authz, cold cache', cold, '/bench/mcp', { headers: setup.auth }),
    ...compared,
  ];
}

/** The benchmarks' `tools/call` (MCP 2025-06-18), with `auth`. */
function legacyCall(auth: Record<string, string>) {
  return { headers: { ...MCP_HEADERS, ...auth }, body: TOOL_CALL_BODY };
}

/** The same call as an MCP 2026-07-28 request. */
function modernCall(auth: Record<string, string>) {
  return { headers: { ...MODERN_MCP_HEADERS, ...auth }, body: MODERN_TOOL_CALL_BODY };
}

/**
 * Deploys the mcp-auth + mcp-authz proxy for both eras and checks that the modern call gets a
 * 200, so that the row measures served calls. A gateway that refuses the version (a
 * `--gateway-bin` build from before MCP 2026-07-28) gets the proxy for the legacy call alone.
 * Resolves with why the modern row is left out, if it is.
 */
async function deployBothEras(
  gateway: GatewayProcess,
  upstreamUrl: string,
  auth: Record<string, string>,
): Promise<string | undefined> {
  const legacyProbe = { path: '/bench/mcp', ...legacyCall(auth) };
  try {
    await gateway.deploy(
      proxyDefinition('bench', '/bench', upstreamUrl, true, BOTH_ERAS),
      legacyProbe,
    );
  } catch (error) {
    if (!(error instanceof DeployRefusedError)) throw error;
    await gateway.deploy(proxyDefinition('bench', '/bench', upstreamUrl, true), legacyProbe);
    return `the gateway refused to deploy it (${error.message})`;
  }
  const { headers, body } = modernCall(auth);
  const answer = await fetch(`${gateway.plainUrl}/bench/mcp`, { method: 'POST', headers, body });
  const text = await answer.text();
  return answer.ok
    ? undefined
    : `the gateway answered its call ${answer.status} ${text.slice(0, 300)}`;
}

/**
 * Deploys the warm case's proxy with one CEL condition (`CONDITION`) at `/conditioned`; a
 * gateway build from before conditions refuses it. Resolves with why the row is left out.
 */
async function deployConditioned(
  gateway: GatewayProcess,
  upstreamUrl: string,
  auth: Record<string, string>,
): Promise<string | undefined> {
  try {
    await gateway.deploy(
      proxyDefinition('conditioned', '/conditioned', upstreamUrl, true, LEGACY_ERA, CONDITION),
      { path: '/conditioned/mcp', ...legacyCall(auth) },
    );
    return undefined;
  } catch (error) {
    if (!(error instanceof DeployRefusedError)) throw error;
    return `the gateway refused to deploy it (${error.message})`;
  }
}

/** What an instrumented run of one gateway case needs. */
interface InstrumentSetup {
  upstreamUrl: string;
  keyManager: { name: string; issuer: string; jwksUri: string };
  auth: Record<string, string>;
  workers: number | undefined;
}

const PROFILE_CASES = ['warm', 'cold', 'open', 'modern'] as const;
type ProfileCase = (typeof PROFILE_CASES)[number];

/** The gateway case `--profile-case` names (`modern`: the warm case's call in MCP 2026-07-28). */
function profileCase(): ProfileCase {
  const which = args['profile-case'];
  if (!(PROFILE_CASES as readonly string[]).includes(which)) {
    throw new Error(`--profile-case is ${PROFILE_CASES.join(', ')}, not ${which}`);
  }
  return which as ProfileCase;
}

/** The proxy of a `--profile-case`: policies but in `open`, both eras in `modern`. */
function caseProxy(which: ProfileCase, upstreamUrl: string) {
  const versions = which === 'modern' ? BOTH_ERAS : LEGACY_ERA;
  return proxyDefinition('bench', '/bench', upstreamUrl, which !== 'open', versions);
}

/** The request of a `--profile-case`: every case but `open` carries the token. */
function caseRequest(which: ProfileCase, auth: Record<string, string>) {
  if (which === 'modern') return modernCall(auth);
  return legacyCall(which === 'open' ? {} : auth);
}

/**
 * Instructions per request of the gateway (the `--profile-case`) and of nginx as a proxy (one
 * process), each under callgrind against the same nginx upstream: after a warm-up of
 * `--instructions-warmup` requests (so V8 has compiled the hot path), the counters are zeroed,
 * `--instructions-rate` requests a second are sent for `--instructions-seconds`, and the count is
 * divided by them.
 */
async function countInstructions(
  client: LoadClient,
  dir: string,
  setup: InstrumentSetup,
): Promise<void> {
  const which = profileCase();
  const { headers, body } = caseRequest(which, setup.auth);
  const connections = CONNECTIONS[0] as number;
  const load = (url: string, seconds: number) =>
    runLoad(client, { url, connections, method: 'POST', headers, body, seconds });
  const count = async (
    target: { url: string; pid: number; uid?: number | undefined; stop(): Promise<void> },
    at: string,
  ) => {
    try {
      for (let warmed = 0; warmed < INSTRUCTIONS_WARMUP; ) {
        warmed += (await load(target.url, 5)).requests;
      }
      await zeroCounters(target);
      const requests = await fixedRateLoad({
        url: target.url,
        rate: INSTRUCTIONS_RATE,
        seconds: INSTRUCTIONS_SECONDS,
        connections,
        headers,
        body,
      });
      const instructions = await dumpInstructions(target, at);
      return { requests, perRequest: instructions / requests };
    } finally {
      await target.stop();
    }
  };

  const gatewayDir = join(dir, 'callgrind-gateway');
  const callgrindDir = join(gatewayDir, 'callgrind');
  mkdirSync(callgrindDir, { recursive: true });
  const gateway = await startGatewayProcess({
    ...GATEWAY_BIN,
    dir: gatewayDir,
    keyManager: setup.keyManager,
    tokenCacheEntries: which === 'cold' ? 0 : undefined,
    wrapper: callgrindCommand(callgrindDir),
  });
  const gatewayRow = await (async () => {
    await gateway.deploy(caseProxy(which, setup.upstreamUrl), {
      path: '/bench/mcp',
      headers,
      body,
    });
    return count({ ...gateway, url: `${gateway.plainUrl}/bench/mcp` }, callgrindDir);
  })().catch(async (error) => {
    await gateway.stop();
    throw error;
  });
  const nginx = await startNginx(
    { kind: 'proxy', upstreamUrl: setup.upstreamUrl, workers: 1 },
    { wrapper: callgrindCommand },
  );
  if (!nginx) throw new Error('nginx did not start under callgrind');
  const nginxRow = await count(nginx, nginx.dir);
  console.log(
    `\nuser-space instructions per request (callgrind; ${which} case, ${INSTRUCTIONS_RATE} req/s on ${connections} connections for ${INSTRUCTIONS_SECONDS} s, counted after ${INSTRUCTIONS_WARMUP} warm-up requests; the kernel is not counted):`,
  );
  const row = (name: string, r: { requests: number; perRequest: number }) => [
    name,
    String(r.requests),
    r.perRequest.toFixed(0),
    times(r.perRequest, nginxRow.perRequest),
  ];
  console.log(
    markdownTable(
      ['path', 'requests counted', 'instructions/req', '× nginx 1w'],
      [row(`gateway, ${which}`, gatewayRow), row(NGINX_1, nginxRow)],
    ),
  );
}

function resultTable(targets: Target[], results: Map<string, Measured>, baseline: string): string {
  const direct = results.get(baseline) as Measured;
  const viaNginx1 = results.get(NGINX_1);
  const viaNginxN = results.get(NGINX_N);
  const rows = targets.map((target) => {
    const r = results.get(target.name) as Measured;
    return [
      target.name,
      r.rps.toFixed(0),
      fixed(r.p50Ms, 2),
      fixed(r.p99Ms, 2),
      fixed(r.cpuMsPerRequest, 4),
      percent(r.kernelShare, 1),
      fixed(r.sleepsPerRequest, 2),
      r.connectionSplit?.join('+') || 'n/a',
      percent(r.rps, direct.rps),
      percent(r.rps, viaNginx1?.rps),
      percent(r.rps, viaNginxN?.rps),
      fixed(r.p50Ms - direct.p50Ms, 2),
      times(r.cpuMsPerRequest, viaNginx1?.cpuMsPerRequest),
    ];
  });
  return markdownTable(
    [
      'path',
      'req/s',
      'p50 ms',
      'p99 ms',
      'CPU ms/req',
      'in kernel',
      'sleeps/req',
      'conns/process',
      'share of direct',
      'share of nginx 1w',
      `share of nginx ${CORES}w`,
      'added p50 ms',
      'CPU/req × nginx 1w',
    ],
    rows,
  );
}

/** The Node.js floor on as many processes as a gateway row: what its CPU/req is a multiple of. */
function floorOf(target: Target): string {
  return target.workers === undefined ? NODE_PROXY : nodeProxyWorkers(target.workers);
}

/** ` (a; b)` of the parts that are not empty, or nothing. */
function aside(...parts: string[]): string {
  const said = parts.filter((part) => part !== '');
  return said.length === 0 ? '' : ` (${said.join('; ')})`;
}

/**
 * Said of an absolute goal (`--goal-cpu-ms`, `--goal-added-p50-ms`) that a row below the gateway
 * misses in this run: on such a machine the gateway's row cannot show whether the gateway meets
 * it, only its multiple of the floor can. The TCP relay (`--lower-bounds`) reads no HTTP at all,
 * so a goal it misses is out of reach of a Node.js proxy on this machine in this run, whatever
 * its HTTP code.
 */
function belowMisses(
  floor: number | undefined,
  relay: number | undefined,
  goal: number | undefined,
  digits: number,
): string {
  if (goal === undefined) return '';
  if (relay !== undefined && relay > goal) {
    return `even "${TCP_RELAY}" misses it in this run: ${fixed(relay, digits)}`;
  }
  return floor !== undefined && floor > goal ? 'the floor itself misses it on this machine' : '';
}

/** A legacy fast-path row (auth+authz, warm cache); the modern one is compared with it instead. */
function isFastPath(target: Target): boolean {
  return target.name.endsWith(WARM);
}

/**
 * The modern row's cost against the legacy row of the same gateway at `connections`: issue 39
 * asks that deciding from the headers cost no more CPU per request than reading the body first.
 */
function eraLines(connections: number, targets: Target[], results: Map<string, Measured>) {
  return targets.flatMap(({ name, legacyOf }) => {
    if (legacyOf === undefined) return [];
    const modern = results.get(name) as Measured;
    const legacy = results.get(legacyOf) as Measured;
    return [
      `${connections} conns, ${name} against legacy (MCP 2025-06-18): CPU ${fixed(modern.cpuMsPerRequest, 4)} / ${fixed(legacy.cpuMsPerRequest, 4)} ms/req = ${times(modern.cpuMsPerRequest, legacy.cpuMsPerRequest, 2)}, req/s ${percent(modern.rps, legacy.rps)} of legacy's, p50 ${fixed(modern.p50Ms, 2)} / ${fixed(legacy.p50Ms, 2)} ms`,
    ];
  });
}

/**
 * The traced row's (and the `--before-bin` build's) cost against this build's warm row with
 * tracing off, at `connections`: what tracing costs when on, and that off it costs nothing.
 */
function comparedLines(connections: number, targets: Target[], results: Map<string, Measured>) {
  return targets.flatMap(({ name, comparedWith }) => {
    if (comparedWith === undefined) return [];
    const row = results.get(name) as Measured;
    const off = results.get(comparedWith) as Measured;
    return [
      `${connections} conns, ${name} against "${comparedWith}": CPU ${fixed(row.cpuMsPerRequest, 4)} / ${fixed(off.cpuMsPerRequest, 4)} ms/req = ${times(row.cpuMsPerRequest, off.cpuMsPerRequest, 2)}, req/s ${percent(row.rps, off.rps)}, p50 ${fixed(row.p50Ms, 2)} / ${fixed(off.p50Ms, 2)} ms`,
    ];
  });
}

/**
 * What the fast path (auth+authz, warm cache) measured at `connections`, against the same run's
 * nginx and floor, and against the goals given on the command line.
 */
function fastPathLines(
  connections: number,
  targets: Target[],
  results: Map<string, Measured>,
  baseline: string,
): string[] {
  const direct = results.get(baseline) as Measured;
  return targets.filter(isFastPath).map((target) => {
    const r = results.get(target.name) as Measured;
    const { workers } = target;
    const sameCores = results.get(workers === undefined ? NGINX_1 : NGINX_N);
    const share = sameCores && (100 * r.rps) / sameCores.rps;
    const floor = floorOf(target);
    const floorRow = results.get(floor);
    const floorCpu = floorRow?.cpuMsPerRequest;
    const relayCpu = results.get(TCP_RELAY)?.cpuMsPerRequest;
    const addedP50 = r.p50Ms - direct.p50Ms;
    const rssRatio = (r.peakRss ?? Number.NaN) / (target.idleRss ?? Number.NaN);
    const rssMb = fixed((r.peakRss ?? Number.NaN) / 2 ** 20, 0);
    // The added-p50 goal is for 10 connections: at more, p50 is mostly queueing.
    const p50Goal = connections === 10 ? GOALS.addedP50Ms : undefined;
    return [
      `${connections} conns, ${target.name}: ${percent(r.rps, sameCores?.rps)} of nginx as proxy on the same cores`,
      aside(
        `"${floor}" ${percent(floorRow?.rps, sameCores?.rps)}`,
        verdict(share, GOALS.shareOfNginxPercent, '≥', '%'),
      ),
      `, CPU ${fixed(r.cpuMsPerRequest, 4)} ms/req`,
      aside(
        `${times(r.cpuMsPerRequest, floorCpu, 2)} "${floor}"`,
        verdict(r.cpuMsPerRequest, GOALS.cpuMs, '≤', ' ms'),
        belowMisses(floorCpu, relayCpu, GOALS.cpuMs, 4),
      ),
      `, added p50 ${fixed(addedP50, 2)} ms`,
      aside(verdict(addedP50, p50Goal, '≤', ' ms')),
      `, peak RSS ${rssMb} MB = ${fixed(rssRatio, 2)}× idle`,
      aside(verdict(rssRatio, GOALS.rssRatio, '≤', '×')),
    ].join('');
  });
}

/** Light load: each of 10 connections pauses this long on average between requests (~1,900 req/s in all). */
const LIGHT_PAUSE_MS = 5;
const LIGHT_CONNECTIONS = 10;

/**
 * The latency each path adds when nothing queues: at saturation (the tables above) a request's
 * latency is mostly its wait behind the others (p50 ≈ connections / throughput), so "added p50"
 * there restates throughput. Here every row gets the same light load, with random pauses so that
 * the connections do not send in step (which would measure a burst queueing); rows take turns
 * round after round and each reports its median round by p50. Returns the fast path's lines.
 */
async function lightLoadLatency(targets: Target[], baseline: string): Promise<string[]> {
  const medians = await interleavedRounds(
    targets,
    ROUNDS,
    (target) =>
      runLoad('wrk', {
        ...toolCallLoad(target, LIGHT_CONNECTIONS),
        seconds: SECONDS,
        pauseMs: LIGHT_PAUSE_MS,
      }),
    (r) => r.p50Ms,
  );
  const results = new Map([...medians].map(([target, r]) => [target.name, r]));
  const direct = results.get(baseline) as LoadResult;
  const added = (r: LoadResult) => fixed(r.p50Ms - direct.p50Ms, 3);
  console.log(
    `\nlight load: ${LIGHT_CONNECTIONS} connections, each pausing ${LIGHT_PAUSE_MS} ms on average (0–${2 * LIGHT_PAUSE_MS} ms at random) between requests; median of ${ROUNDS} rounds by p50`,
  );
  console.log(
    markdownTable(
      ['path', 'req/s', 'p50 ms', 'p99 ms', 'added p50 ms'],
      targets.map((target) => {
        const r = results.get(target.name) as LoadResult;
        return [target.name, r.rps.toFixed(0), fixed(r.p50Ms, 3), fixed(r.p99Ms, 3), added(r)];
      }),
    ),
  );
  return targets.filter(isFastPath).map((target) => {
    const r = results.get(target.name) as LoadResult;
    const floorName = floorOf(target);
    const floor = results.get(floorName);
    const floorAdded = floor && floor.p50Ms - direct.p50Ms;
    const relay = results.get(TCP_RELAY);
    const relayAdded = relay && relay.p50Ms - direct.p50Ms;
    const goal = GOALS.addedP50Ms;
    return `light load (${r.rps.toFixed(0)} req/s over ${LIGHT_CONNECTIONS} connections), ${target.name}: added p50 ${added(r)} ms${aside(
      `"${floorName}" added ${fixed(floorAdded, 3)} ms`,
      verdict(r.p50Ms - direct.p50Ms, goal, '≤', ' ms'),
      belowMisses(floorAdded, relayAdded, goal, 3),
    )}`;
  });
}

/**
 * Runs one gateway case (`--profile-case`) under an instrument: `node --cpu-prof`, summarised, or
 * `strace -c -f`, as system calls per request.
 */
async function instrumentGateway(
  client: LoadClient,
  dir: string,
  setup: InstrumentSetup,
  instrument: 'cpu-prof' | 'strace' | 'perf',
): Promise<void> {
  const { upstreamUrl, keyManager, auth } = setup;
  const which = profileCase();
  // Kept when --profile-dir is given, to open in Chrome DevTools or speedscope.
  const profileDir = args['profile-dir'] ?? join(dir, 'profile');
  mkdirSync(profileDir, { recursive: true });
  const gateway: GatewayProcess = await startGatewayProcess({
    ...GATEWAY_BIN,
    dir: join(dir, `${instrument}-gateway`),
    keyManager,
    tokenCacheEntries: which === 'cold' ? 0 : undefined,
    workers: setup.workers,
    ...(instrument === 'cpu-prof' ? { cpuProfileDir: profileDir } : {}),
    ...(instrument === 'perf' ? { nodeFlags: ['--perf-basic-prof'] } : {}),
  });
  const perfData = join(dir, 'perf.data');
  const connections = CONNECTIONS[0] as number;
  let result: LoadResult;
  const microseconds = () => Number(process.hrtime.bigint() / 1000n);
  let window = { fromUs: 0, toUs: 0 };
  let syscalls: Map<string, number> | undefined;
  try {
    const load = toolCallLoad(
      { url: `${gateway.plainUrl}/bench/mcp`, ...caseRequest(which, auth) },
      connections,
    );
    await gateway.deploy(caseProxy(which, upstreamUrl), {
      path: '/bench/mcp',
      headers: load.headers,
      body: load.body,
    });
    if (WARMUP_SECONDS > 0) await runLoad(client, { ...load, seconds: WARMUP_SECONDS });
    const trace =
      instrument === 'strace'
        ? await traceSyscalls(gateway.pid, join(dir, 'strace.txt'))
        : undefined;
    const perf = instrument === 'perf' ? await recordPerf(gateway.pid, perfData) : undefined;
    window = { fromUs: microseconds(), toUs: 0 };
    result = await runLoad(client, { ...load, seconds: SECONDS });
    window.toUs = microseconds();
    syscalls = await trace?.stop();
    await perf?.stop();
  } finally {
    await gateway.stop();
  }
  const what = `${which} case, ${connections} connections, ${SECONDS} s`;
  if (instrument === 'perf') {
    try {
      console.log(`\non-CPU samples of the gateway, kernel included (perf record, ${what}):`);
      for (const sort of ['dso', 'dso,sym'] as const) {
        const rows = await perfReport(perfData, sort, sort === 'dso' ? 12 : 30);
        console.log(
          `\n${markdownTable(
            [sort === 'dso' ? 'shared object' : 'shared object, symbol', 'share'],
            rows.map((r) => [r.name, r.share]),
          )}`,
        );
      }
    } finally {
      removePerfMap(gateway.pid);
    }
    return;
  }
  if (syscalls) {
    const rows = [...syscalls]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15)
      .map(([name, calls]) => [name, String(calls), fixed(calls / result.requests, 2)]);
    console.log(
      `\nsystem calls of the gateway per request (${what}, ${result.requests} requests at ${result.rps.toFixed(0)} req/s under strace):`,
    );
    console.log(markdownTable(['system call', 'calls', 'per request'], rows));
    return;
  }
  console.log(
    `\nCPU profile of the gateway (${what}, ${result.rps.toFixed(0)} req/s under the profiler):`,
  );
  for (const file of cpuProfiles(profileDir)) {
    console.log(
      `\n${file}\n${formatProfileSummary(summariseCpuProfile(file, { top: 25, window }))}`,
    );
  }
}

await main();
