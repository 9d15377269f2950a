// Benchmark: SCIM search in the embedded IdP at 100,000 users.
// 1. In-process: the first evaluation and p50/p99 (ms) of `.search` per filter, on the server's
//    path, against a filter the index cannot narrow (`emails co`, every user read) in the same run.
// 2. Over HTTP (autocannon, the IdP in its own process): a broad `customerTier eq` search
//    (25,000 matches) and the token endpoint, each against the health endpoint as the fast
//    baseline, then both at once: a search load must not stall token issuance.
//
//   npm run bench:idp
//   npm run bench:idp -- --users 10000 --seconds 2
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createLogger } from '@mcp-identity/common';
import { KNOWN_SCOPES, startIdp } from '@mcp-identity/idp';
import { autocannon } from './kit/autocannon.js';
import { percentile } from './kit/closed-loop.js';
import { benchArgs, numberOption } from './kit/options.js';

const args = benchArgs({
  users: { type: 'string', default: '100000' },
  seconds: { type: 'string', default: '6' },
  /** Internal: the IdP's own process, started by the benchmark. */
  serve: { type: 'boolean', default: false },
});
const USERS = numberOption('users', args.users, 1);
const SECONDS = numberOption('seconds', args.seconds, 1);
const CONNECTIONS = 32;
const INDEX_RUNS = 200;
const UNINDEXED_RUNS = 3;
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const CUSTOM = 'urn:scim:schemas:extension:custom:User';
const SEARCH = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';
const REGIONS = Array.from({ length: 20 }, (_, i) => `region-${i}`);
const DEPARTMENTS = Array.from({ length: 50 }, (_, i) => `dept-${i}`);
const TIERS = ['bronze', 'silver', 'gold', 'platinum'];
const BASIC = `Basic ${Buffer.from('bench:bench-secret').toString('base64')}`;
const BROAD_FILTER = `${CUSTOM}:customerTier eq gold`;
/** A substring of every user's e-mail: the index cannot narrow it, so every user is read. */
const UNINDEXED_FILTER = 'emails co "example"';

const pad = (n: number) => String(n).padStart(6, '0');

/** The duration of each of `runs` calls, in ms, sorted (for `percentile`). */
async function time(runs: number, fn: () => unknown): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await fn();
    samples.push(performance.now() - start);
  }
  return samples.sort((a, b) => a - b);
}

/** The IdP process: seeds the users, prints the in-process table, then its URL and a token. */
async function serve(users: number): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'idp-bench-'));
  const idp = await startIdp({
    dataDir,
    http: true,
    port: 0,
    logger: createLogger({ level: 'warn' }),
    bootstrap: {
      customAttributes: [{ name: 'customerTier', type: 'string' }],
      applications: [
        {
          name: 'bench',
          clientId: 'bench',
          clientSecret: 'bench-secret',
          scopes: [...KNOWN_SCOPES],
        },
      ],
    },
  });
  const stop = async () => {
    await idp.close();
    rmSync(dataDir, { recursive: true, force: true });
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  const seedStart = performance.now();
  const batch = 10_000;
  for (let start = 0; start < users; start += batch) {
    const docs = Array.from({ length: Math.min(batch, users - start) }, (_, k) => {
      const i = start + k;
      return {
        userName: `user${pad(i)}`,
        name: { givenName: `Given${i}`, familyName: `Family${i % 977}` },
        emails: [{ value: `user${pad(i)}@example.com`, primary: true }],
        addresses: [{ type: 'work', formatted: REGIONS[i % REGIONS.length] }],
        [ENTERPRISE]: { department: DEPARTMENTS[i % DEPARTMENTS.length], employeeNumber: `E${i}` },
        [CUSTOM]: { customerTier: TIERS[i % TIERS.length] },
      };
    });
    idp.admin.service.users.seed(docs);
  }
  const log = (line: string) => process.stderr.write(`${line}\n`);
  log(`seeded ${users} users in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`);

  const filters: [string, string][] = [
    ['userName eq', `userName eq user${pad(Math.floor(users / 2))}`],
    ['userName sw', 'userName sw user0001'],
    ['department eq', `${ENTERPRISE}:department eq dept-7`],
    ['addresses.work eq', 'addresses.work eq region-3'],
    ['customerTier eq', BROAD_FILTER],
    ['tier or dept', `${CUSTOM}:customerTier eq gold or ${ENTERPRISE}:department eq dept-1`],
  ];
  const service = idp.admin.service;
  const search = (filter: string) => () => service.listUsers('user', { filter, count: 10 });
  const baseline = await time(UNINDEXED_RUNS, search(UNINDEXED_FILTER));
  const unindexed = percentile(baseline, 50);
  const rows: string[][] = [
    ['emails co (baseline)', String(users), '', unindexed.toFixed(1), '', '1x'],
  ];
  for (const [label, filter] of filters) {
    // First evaluation of a filter: what a search costs before any reuse.
    let first: number;
    try {
      first = (await time(1, search(filter)))[0]!;
    } catch (error) {
      rows.push([label, `unsupported: ${(error as Error).message}`]);
      continue;
    }
    const repeated = await time(INDEX_RUNS, search(filter));
    const total = (await search(filter)()).body?.totalResults;
    rows.push([
      label,
      String(total),
      first.toFixed(2),
      percentile(repeated, 50).toFixed(3),
      percentile(repeated, 99).toFixed(3),
      `${(unindexed / percentile(repeated, 50)).toFixed(0)}x`,
    ]);
  }
  log(`\n.search in-process on ${users} users (ms; count=10)`);
  printTable(['filter', 'matches', 'first', 'p50', 'p99', '× faster'], rows, log);
  console.log(JSON.stringify({ url: idp.url }));
}

function printTable(header: string[], rows: string[][], log: (line: string) => void): void {
  for (const row of [header, ...rows]) {
    log(row.map((cell, i) => (i === 0 ? cell.padEnd(34) : cell.padStart(11))).join(''));
  }
}

async function load(
  url: string,
  connections: number,
  options: Partial<Parameters<typeof autocannon>[0]>,
) {
  const result = await autocannon({
    url,
    method: 'GET',
    connections,
    duration: SECONDS,
    ...options,
  });
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${url}: ${result.non2xx} non-2xx responses, ${result.errors} errors`);
  }
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 };
}

async function main(): Promise<void> {
  const child = spawn(
    process.execPath,
    [...process.execArgv, fileURLToPath(import.meta.url), '--serve', '--users', String(USERS)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    const [line] = (await once(
      createInterface({ input: child.stdout as NodeJS.ReadableStream }),
      'line',
    )) as [string];
    const { url } = JSON.parse(line) as { url: string };
    const tokenResponse = await fetch(`${url}/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: BASIC },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        scope: 'internal_user_mgt_list',
      }),
    });
    const { access_token: token } = (await tokenResponse.json()) as { access_token: string };

    const health = (connections: number) =>
      load(`${url}/api/health-check/v1.0/health`, connections, {});
    const tokens = (connections: number) =>
      load(`${url}/oauth2/token`, connections, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: BASIC },
        body: 'grant_type=client_credentials&scope=internal_user_mgt_list',
      });
    const search = (connections: number) =>
      load(`${url}/scim2/Users/.search`, connections, {
        method: 'POST',
        headers: { 'content-type': 'application/scim+json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ schemas: [SEARCH], filter: BROAD_FILTER, count: 10 }),
      });

    await search(4); // warm-up
    const baseline = await health(CONNECTIONS);
    const tokenAlone = await tokens(CONNECTIONS);
    const searchAlone = await search(CONNECTIONS);
    const half = CONNECTIONS / 2;
    const [tokenMixed, searchMixed] = await Promise.all([tokens(half), search(half)]);
    const scanning = (connections: number) =>
      load(`${url}/scim2/Users/.search`, connections, {
        method: 'POST',
        headers: { 'content-type': 'application/scim+json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ schemas: [SEARCH], filter: UNINDEXED_FILTER, count: 10 }),
      });
    const [tokenWithScans, scans] = await Promise.all([tokens(half), scanning(2)]);

    const row = (label: string, r: { rps: number; p50: number; p99: number }) => [
      label,
      r.rps.toFixed(0),
      r.p50.toFixed(1),
      r.p99.toFixed(1),
      `${((100 * r.rps) / baseline.rps).toFixed(1)}%`,
    ];
    const log = (text: string) => console.log(text);
    log(`\nHTTP, ${CONNECTIONS} connections, ${SECONDS} s each (ms)`);
    printTable(
      ['load', 'req/s', 'p50', 'p99', 'of health'],
      [
        row('health (baseline)', baseline),
        row('token endpoint alone', tokenAlone),
        row(`customerTier eq (25k) alone`, searchAlone),
        row(`token, with ${half} searching`, tokenMixed),
        row(`search, with ${half} tokens`, searchMixed),
        row(`token, with 2 scanning searches`, tokenWithScans),
        row('scanning search (emails co)', scans),
      ],
      log,
    );
    log(
      `\ntoken p99 with a search load / alone: ${(tokenMixed.p99 / tokenAlone.p99).toFixed(2)}x; ` +
        `with scanning searches / alone: ${(tokenWithScans.p99 / tokenAlone.p99).toFixed(2)}x; ` +
        `search req/s / health req/s: ${(searchAlone.rps / baseline.rps).toFixed(3)}`,
    );
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
}

if (args.serve) {
  await serve(USERS);
} else {
  await main();
}
