// Benchmark: SCIM `.search` on 100,000 users in the embedded IdP.
// Prints p50/p99 (ms) per filter over HTTP and in-process, and the ratio of a full scan
// (every user read and matched) to the indexed search, both measured in this run.
// Run: npx tsx bench/src/idp.bench.ts [userCount]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createLogger } from '@mcp-identity/common';
import { KNOWN_SCOPES, startIdp } from '@mcp-identity/idp';

const USERS = Number(process.argv[2] ?? 100_000);
const HTTP_RUNS = 300;
const INDEX_RUNS = 300;
const SCAN_RUNS = 5;
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const CUSTOM = 'urn:scim:schemas:extension:custom:User';
const REGIONS = Array.from({ length: 20 }, (_, i) => `region-${i}`);
const DEPARTMENTS = Array.from({ length: 50 }, (_, i) => `dept-${i}`);
const TIERS = ['bronze', 'silver', 'gold', 'platinum'];

const pad = (n: number) => String(n).padStart(6, '0');
const filters: [string, string][] = [
  ['userName eq', `userName eq user${pad(Math.floor(USERS / 2))}`],
  ['userName sw', `userName sw user0001`],
  ['department eq', `${ENTERPRISE}:department eq dept-7`],
  ['addresses.work eq', 'addresses.work eq region-3'],
  ['customerTier eq', `${CUSTOM}:customerTier eq gold`],
];

function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function time(runs: number, fn: () => unknown | Promise<unknown>): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await fn();
    samples.push(performance.now() - start);
  }
  return samples;
}

const dataDir = mkdtempSync(join(tmpdir(), 'idp-bench-'));
const idp = await startIdp({
  dataDir,
  http: true,
  port: 0,
  logger: createLogger({ level: 'warn' }),
  bootstrap: {
    customAttributes: [{ name: 'customerTier', type: 'string' }],
    applications: [
      { name: 'bench', clientId: 'bench', clientSecret: 'bench-secret', scopes: [...KNOWN_SCOPES] },
    ],
  },
});
try {
  const seedStart = performance.now();
  const batch = 10_000;
  for (let start = 0; start < USERS; start += batch) {
    const docs = Array.from({ length: Math.min(batch, USERS - start) }, (_, k) => {
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
  console.log(`seeded ${USERS} users in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`);

  const tokenResponse = await fetch(`${idp.url}/oauth2/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from('bench:bench-secret').toString('base64')}`,
    },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      scope: 'internal_user_mgt_list',
    }),
  });
  const { access_token: token } = (await tokenResponse.json()) as { access_token: string };

  const rows: string[][] = [];
  for (const [label, filter] of filters) {
    const body = JSON.stringify({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'],
      filter,
      count: 10,
    });
    const search = async () => {
      const response = await fetch(`${idp.url}/scim2/Users/.search`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' },
        body,
      });
      if (response.status !== 200) throw new Error(`${label}: HTTP ${response.status}`);
      return response.arrayBuffer();
    };
    await time(20, search); // warm-up
    const http = await time(HTTP_RUNS, search);
    const query = { filter, count: 10 };
    const indexed = await time(INDEX_RUNS, () => idp.admin.service.listUsers('user', query));
    const scanned = await time(SCAN_RUNS, () => idp.admin.service.listUsers('user', query, 'scan'));
    const total = idp.admin.service.listUsers('user', query).body?.totalResults;
    rows.push([
      label,
      String(total),
      percentile(http, 50).toFixed(2),
      percentile(http, 99).toFixed(2),
      percentile(indexed, 50).toFixed(3),
      percentile(indexed, 99).toFixed(3),
      percentile(scanned, 50).toFixed(1),
      `${(percentile(scanned, 50) / percentile(indexed, 50)).toFixed(0)}x`,
    ]);
  }
  const header = [
    'filter',
    'matches',
    'http p50',
    'http p99',
    'index p50',
    'index p99',
    'scan p50',
    'scan/index',
  ];
  console.log(`\n.search on ${USERS} users (ms; count=10)`);
  for (const row of [header, ...rows]) {
    console.log(row.map((cell, i) => (i === 0 ? cell.padEnd(18) : cell.padStart(11))).join(''));
  }
} finally {
  await idp.close();
  rmSync(dataDir, { recursive: true, force: true });
}
