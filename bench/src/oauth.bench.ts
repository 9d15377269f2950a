/**
 * Area A guard overhead and token endpoint throughput, in one run:
 *  1. `tools/list` on a stateless MCP endpoint with a valid Bearer token (guard on) versus the
 *     same server with the guard off: time per call of each and their ratio;
 *  2. authorization-code exchanges per second (codes are seeded through the store interface,
 *     so the measurement is the token endpoint alone: consume, bindings, PKCE, JWT signing).
 *
 *   npx tsx bench/src/oauth.bench.ts            (needs `npm run build` first)
 *   OAUTH_BENCH_CALLS=5000 npx tsx bench/src/oauth.bench.ts
 */
import { createHash, randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import {
  createAccessTokenIssuer,
  createMcpGuard,
  generateSigningKey,
  MemoryOAuthStore,
  oauthServer,
} from '@mcp-identity/oauth';
import Fastify from 'fastify';
import { Pool } from 'undici';
import { mountBenchMcp } from './mcp-route.js';

const CALLS = Number(process.env.OAUTH_BENCH_CALLS ?? 2000);
const CONCURRENCY = 8;
const ROUNDS = 5;
const REDIRECT_URI = 'http://127.0.0.1:8976/callback';

const key = await generateSigningKey('ES256');
const store = new MemoryOAuthStore();

async function startServer(auth: boolean) {
  const app = Fastify({ logger: false });
  if (auth) app.addHook('onRequest', createMcpGuard({ key: key.publicKey, algorithms: ['ES256'] }));
  await app.register(oauthServer, {
    store,
    limits: { tokenRequestsPerIpPerMinute: 1_000_000_000 },
    issueAccessToken: createAccessTokenIssuer(key),
    checkSubject: async () => ({ active: true, scopes: ['mcp:tools'] }),
    login: async () => ({ ok: false, reason: 'invalid_credentials' }),
  });
  mountBenchMcp(app, { name: 'ping', text: 'pong' });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, url, pool: new Pool(url, { connections: CONCURRENCY }) };
}

/** Runs `calls` requests, `CONCURRENCY` at a time; returns milliseconds per call. */
async function measure(calls: number, once: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < calls) await once(next++);
    }),
  );
  return (performance.now() - started) / calls;
}

const withAuth = await startServer(true);
const withoutAuth = await startServer(false);

const issuer = withAuth.url;
const { token } = await createAccessTokenIssuer(key, { ttlSeconds: 3600 })({
  userId: 'bench-user',
  clientId: 'bench-client',
  scope: 'mcp:tools',
  audience: `${issuer}/mcp`,
  issuer,
});

const listBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
function toolsList(pool: Pool, authorization?: string) {
  return async () => {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    if (authorization) headers.authorization = authorization;
    const response = await pool.request({ method: 'POST', path: '/mcp', headers, body: listBody });
    const text = await response.body.text();
    if (response.statusCode !== 200) throw new Error(`tools/list ${response.statusCode}: ${text}`);
  };
}

const guarded = toolsList(withAuth.pool, `Bearer ${token}`);
const open = toolsList(withoutAuth.pool);
await measure(200, guarded);
await measure(200, open);

const guardedTimes: number[] = [];
const openTimes: number[] = [];
// Alternating which side goes first keeps warm-up and background load from favouring one.
for (let round = 0; round < ROUNDS; round += 1) {
  if (round % 2 === 0) {
    openTimes.push(await measure(CALLS, open));
    guardedTimes.push(await measure(CALLS, guarded));
  } else {
    guardedTimes.push(await measure(CALLS, guarded));
    openTimes.push(await measure(CALLS, open));
  }
}
const best = (values: number[]) => Math.min(...values);

/** Seeds one code per exchange, as POST /oauth/authorize would after a login. */
function seedCodes(count: number) {
  const now = Date.now();
  return Array.from({ length: count }, () => {
    const code = randomBytes(32).toString('base64url');
    const verifier = randomBytes(32).toString('base64url');
    void store.saveCode(createHash('sha256').update(code).digest('base64url'), {
      userId: 'bench-user',
      clientId: 'bench-client',
      redirectUri: REDIRECT_URI,
      codeChallenge: createHash('sha256').update(verifier).digest('base64url'),
      scope: 'mcp:tools',
      grantId: randomBytes(16).toString('base64url'),
      expiresAt: now + 10 * 60_000,
    });
    return { code, verifier };
  });
}

const codes = seedCodes(CALLS);
const exchangeMs = await measure(CALLS, async (i) => {
  const { code, verifier } = codes[i]!;
  const response = await withAuth.pool.request({
    method: 'POST',
    path: '/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      client_id: 'bench-client',
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
    }).toString(),
  });
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new Error(`token ${response.statusCode}: ${text}`);
});

console.log(
  `tools/list, ${CALLS} calls x ${ROUNDS} rounds, concurrency ${CONCURRENCY} (best round):`,
);
console.log(`  auth off:        ${best(openTimes).toFixed(3)} ms/call`);
console.log(`  guard + ES256:   ${best(guardedTimes).toFixed(3)} ms/call`);
console.log(`  ratio:           ${(best(guardedTimes) / best(openTimes)).toFixed(2)}x`);
console.log(
  `code exchanges:    ${(1000 / exchangeMs).toFixed(0)} /s (${exchangeMs.toFixed(3)} ms each)`,
);

await Promise.all([withAuth.pool.close(), withoutAuth.pool.close()]);
await Promise.all([withAuth.app.close(), withoutAuth.app.close()]);
