/**
 * Arazzo engine overhead: a two-step workflow run through @mcp-identity/arazzo against a local
 * Fastify API, versus the same two requests made directly with undici, in the same process.
 * Prints the time per call of each, their ratio, and the engine's own cost per call.
 *
 *   npx tsx bench/src/arazzo.bench.ts            (needs `npm run build` first)
 *   ARAZZO_BENCH_CALLS=2000 npx tsx bench/src/arazzo.bench.ts
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createRunner, loadArazzo } from '@mcp-identity/arazzo';
import Fastify from 'fastify';
import { Agent, request } from 'undici';

const CALLS = Number(process.env.ARAZZO_BENCH_CALLS ?? 1000);
const ROUNDS = 5;

const app = Fastify({ logger: false });
app.get('/users', async (req) => {
  const { userName } = req.query as { userName?: string };
  return { totalResults: 1, Resources: [{ id: 'u1', userName }] };
});
app.get('/users/:id', async (req) => ({
  id: (req.params as { id: string }).id,
  userName: 'alice',
  groups: [{ value: 'g1' }],
}));
const base = await app.listen({ host: '127.0.0.1', port: 0 });

const dir = mkdtempSync(join(tmpdir(), 'arazzo-bench-'));
writeFileSync(
  join(dir, 'api.openapi.yaml'),
  `openapi: 3.1.0
info: {title: Bench API, version: '1'}
servers: [{url: '${base}'}]
paths:
  /users:
    get: {operationId: findUser, responses: {'200': {description: ok}}}
  /users/{id}:
    get:
      operationId: getUser
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses: {'200': {description: ok}}
`,
);
writeFileSync(
  join(dir, 'bench.arazzo.yaml'),
  `arazzo: 1.0.1
info: {title: bench, version: '1'}
sourceDescriptions: [{name: api, url: api.openapi.yaml}]
workflows:
  - workflowId: lookup
    inputs: {type: object, properties: {userName: {type: string}}}
    steps:
      - stepId: find
        operationId: findUser
        parameters: [{name: userName, in: query, value: $inputs.userName}]
        successCriteria: [{condition: $statusCode == 200}]
        outputs: {id: '$response.body#/Resources/0/id'}
      - stepId: get
        operationId: getUser
        parameters: [{name: id, in: path, value: $steps.find.outputs.id}]
        successCriteria: [{condition: $statusCode == 200}]
        outputs: {user: $response.body}
    outputs:
      user: $steps.get.outputs.user
`,
);

const loaded = await loadArazzo(join(dir, 'bench.arazzo.yaml'));
const runner = createRunner(loaded, { env: {} });
const agent = new Agent({ keepAliveTimeout: 30_000 });

async function viaEngine(): Promise<void> {
  const result = await runner.run('lookup', { userName: 'alice' });
  if (result.kind !== 'completed' || result.failedStep) throw new Error(JSON.stringify(result));
}

async function direct(): Promise<void> {
  const first = await request(`${base}/users?userName=alice`, { dispatcher: agent });
  const found = (await first.body.json()) as { Resources: { id: string }[] };
  const second = await request(`${base}/users/${encodeURIComponent(found.Resources[0]!.id)}`, {
    dispatcher: agent,
  });
  const user = await second.body.json();
  if (first.statusCode !== 200 || second.statusCode !== 200 || !user) throw new Error('bad answer');
}

async function time(fn: () => Promise<void>, calls: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < calls; i++) await fn();
  return (performance.now() - started) / calls;
}

try {
  await time(viaEngine, 200); // warm-up: JIT, connection pools
  await time(direct, 200);
  const engine: number[] = [];
  const raw: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    engine.push(await time(viaEngine, CALLS));
    raw.push(await time(direct, CALLS));
  }
  const median = (values: number[]) =>
    [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const engineMs = median(engine);
  const directMs = median(raw);
  console.log(`arazzo bench: ${ROUNDS} rounds x ${CALLS} calls of a two-step workflow (medians)`);
  console.log(`  engine (2 steps, expressions, criteria, outputs): ${engineMs.toFixed(3)} ms/call`);
  console.log(
    `  direct undici (same 2 requests):                   ${directMs.toFixed(3)} ms/call`,
  );
  console.log(`  ratio engine/direct: ${(engineMs / directMs).toFixed(2)}x`);
  console.log(`  engine's own cost: ${(engineMs - directMs).toFixed(3)} ms/call`);
} finally {
  await runner.close();
  await agent.close();
  await app.close();
  rmSync(dir, { recursive: true, force: true });
}
