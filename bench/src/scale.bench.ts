/**
 * bench:scale — gateway tools/call throughput through nginx as the load balancer, with 1, 2 and
 * 4 gateway instances (one process each, all on one PostgreSQL) and with one instance running
 * `--workers 2`, each as a ratio to one instance measured in the same run. The upstream is the
 * cheapest possible MCP server (a fixed tools/call result) in its own process, so that it is
 * not what gets measured; nginx straight to that upstream is the load balancer's own ceiling.
 * Needs Debian's postgresql and nginx; every process runs on loopback ephemeral ports and is
 * stopped at the end.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { hashSecret, randomToken } from '@mcp-identity/common';
import {
  freePort,
  nginxMissing,
  postgresMissing,
  startFixedUpstream,
  startLoadBalancer,
  startPostgres,
  type TestLoadBalancer,
} from '@mcp-identity/common/testing';
import { autocannon } from './kit/autocannon.js';
import { writeGatewayConfig } from './kit/gateway-config.js';

const SECONDS = Number(process.env.SCALE_BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.SCALE_BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.SCALE_BENCH_CONNECTIONS ?? 32);
const GATEWAY_BIN = fileURLToPath(new URL('../../packages/gateway/dist/bin.js', import.meta.url));
const CONTEXT = '/scale';
const TOOL_CALL = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name: 'search_users', arguments: {} },
});

async function measure(url: string, seconds: number) {
  const result = await autocannon({
    url,
    method: 'POST',
    connections: CONNECTIONS,
    duration: seconds,
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: TOOL_CALL,
  });
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${url}: ${result.non2xx} non-2xx responses, ${result.errors} errors`);
  }
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 };
}

/** The upstream in its own process (this file with `--upstream`), as in a real deployment. */
async function spawnUpstream(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    [...process.execArgv, fileURLToPath(import.meta.url), '--upstream'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const [line] = (await once(
    createInterface({ input: child.stdout as NodeJS.ReadableStream }),
    'line',
  )) as [string];
  return { url: line, child };
}

interface Instance {
  plainHost: string;
  managementUrl: string;
  child: ChildProcess;
}

/** `gateway serve` on free ports with the audit log on (written to a file, as in production). */
async function startInstance(
  dir: string,
  databaseUrl: string,
  adminHash: string,
  workers: number,
): Promise<Instance> {
  const [https, http, management] = [await freePort(), await freePort(), await freePort()];
  const config = writeGatewayConfig(dir, {
    dataDir: dir,
    httpsPort: https,
    httpPort: http,
    managementPort: management,
    adminPasswordHash: adminHash,
  });
  const logFile = join(dir, 'gateway.log');
  const log = openSync(logFile, 'w');
  const child = spawn(
    process.execPath,
    [GATEWAY_BIN, 'serve', '--config', config, '--workers', String(workers)],
    { stdio: ['ignore', log, log], env: { ...process.env, GATEWAY_DATABASE_URL: databaseUrl } },
  );
  closeSync(log);
  const deadline = Date.now() + 60_000;
  while (!readFileSync(logFile, 'utf8').includes('"gateway started"')) {
    if (child.exitCode !== null || Date.now() > deadline) {
      throw new Error(`gateway did not start:\n${readFileSync(logFile, 'utf8')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    plainHost: `127.0.0.1:${http}`,
    managementUrl: `http://127.0.0.1:${management}`,
    child,
  };
}

async function main(): Promise<void> {
  const missing = postgresMissing() ?? nginxMissing();
  if (missing) {
    console.error(`bench:scale needs PostgreSQL and nginx: ${missing}`);
    process.exitCode = 1;
    return;
  }
  const loadBefore = loadavg();
  const root = mkdtempSync(join(tmpdir(), 'scale-bench-'));
  const postgres = await startPostgres();
  const upstream = await spawnUpstream();
  const instances: Instance[] = [];
  const balancers: TestLoadBalancer[] = [];
  try {
    const databaseUrl = postgres.createDatabase('bench');
    const password = randomToken(12);
    const adminHash = await hashSecret(password);
    const start = (name: string, workers: number) =>
      startInstance(mkdtempSync(join(root, `${name}-`)), databaseUrl, adminHash, workers);
    for (let i = 0; i < 4; i += 1) instances.push(await start(`instance${i + 1}`, 1));
    const withWorkers = await start('workers2', 2);
    instances.push(withWorkers);

    const deployed = await fetch(`${instances[0]?.managementUrl}/api/management/v1/mcp-proxies`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`admin:${password}`).toString('base64')}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({
        apiVersion: 'gateway.api-platform.vendor/v1',
        kind: 'Mcp',
        metadata: { name: 'scale' },
        spec: {
          displayName: 'scale',
          version: 'v1.0',
          context: CONTEXT,
          specVersions: ['2025-06-18'],
          upstream: { url: upstream.url },
        },
      }),
    });
    if (deployed.status !== 201) throw new Error(`deploy failed: ${deployed.status}`);

    const upstreamHost = new URL(upstream.url).host;
    const gatewayHosts = (n: number) => instances.slice(0, n).map((i) => i.plainHost);
    const scenarios: Array<{ name: string; backends: string[]; path: string }> = [
      { name: '1 instance (--workers 1)', backends: gatewayHosts(1), path: `${CONTEXT}/mcp` },
      { name: '2 instances', backends: gatewayHosts(2), path: `${CONTEXT}/mcp` },
      { name: '4 instances', backends: gatewayHosts(4), path: `${CONTEXT}/mcp` },
      { name: '1 instance --workers 2', backends: [withWorkers.plainHost], path: `${CONTEXT}/mcp` },
      { name: 'nginx → upstream (no gateway)', backends: [upstreamHost], path: '/mcp' },
    ];
    const urls: string[] = [];
    for (const scenario of scenarios) {
      const balancer = await startLoadBalancer({ backends: scenario.backends });
      balancers.push(balancer);
      urls.push(`${balancer.url}${scenario.path}`);
      await measure(urls.at(-1) as string, 3); // warm-up: JIT and keep-alive pools
    }
    // Other work on the machine comes and goes: the scenarios take turns, round after round,
    // and each reports its median round.
    const results = scenarios.map(() => [] as Array<Awaited<ReturnType<typeof measure>>>);
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const [i, url] of urls.entries()) results[i]?.push(await measure(url, SECONDS));
    }
    const median = (values: number[]) =>
      [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
    const rows = scenarios.map((scenario, i) => {
      const runs = results[i] ?? [];
      return {
        name: scenario.name,
        rps: median(runs.map((r) => r.rps)),
        p50: median(runs.map((r) => r.p50)),
        p99: median(runs.map((r) => r.p99)),
      };
    });
    const baseline = rows[0]?.rps ?? 1;
    console.log(
      `\ntools/call through nginx (1 worker process), ${CONNECTIONS} connections, median of ` +
        `${ROUNDS} rounds of ${SECONDS} s; ${availableParallelism()} cores, load average before ` +
        `the run ${loadBefore.map((l) => l.toFixed(1)).join(' ')}\n`,
    );
    console.log('| setup | req/s | p50 ms | p99 ms | ratio to 1 instance |');
    console.log('|---|---:|---:|---:|---:|');
    for (const r of rows) {
      console.log(
        `| ${r.name} | ${r.rps.toFixed(0)} | ${r.p50} | ${r.p99} | ${(r.rps / baseline).toFixed(2)} |`,
      );
    }
  } finally {
    await Promise.all(balancers.map((b) => b.close()));
    await Promise.all(
      instances.map(async ({ child }) => {
        if (child.exitCode !== null) return;
        child.kill('SIGTERM');
        await once(child, 'exit');
      }),
    );
    upstream.child.kill();
    await postgres.close();
    rmSync(root, { recursive: true, force: true });
  }
}

if (process.argv.includes('--upstream')) {
  const upstream = await startFixedUpstream();
  console.log(upstream.mcpUrl);
} else {
  await main();
}
