/**
 * Gateway overhead: `tools/call` through the gateway (mcp-auth + mcp-authz, RS256 token) versus
 * straight to the same upstream MCP server, measured with autocannon in one run. Prints both
 * throughputs, their ratio, and the latency the gateway adds at p50 and p99. With Debian's nginx
 * installed, nginx as a plain reverse proxy to the same upstream is measured too, as a reference.
 *
 *   npm run bench:gateway
 *   GATEWAY_BENCH_SECONDS=20 GATEWAY_BENCH_CONNECTIONS=16 npm run bench:gateway
 */

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { type AddressInfo, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createLogger, hashSecret } from '@mcp-identity/common';
import { startGateway } from '@mcp-identity/gateway';
import Fastify from 'fastify';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { mountBenchMcp } from './mcp-route.js';

interface AutocannonResult {
  requests: { average: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
}
// autocannon ships no type declarations; this is the slice of its API used here.
const autocannon = createRequire(import.meta.url)('autocannon') as (options: {
  url: string;
  method: string;
  connections: number;
  duration: number;
  headers: Record<string, string>;
  body: string;
}) => Promise<AutocannonResult>;

const SECONDS = Number(process.env.GATEWAY_BENCH_SECONDS ?? 8);
const CONNECTIONS = Number(process.env.GATEWAY_BENCH_CONNECTIONS ?? 10);
const ISSUER = 'https://idp.bench/oauth2/token';
const AUDIENCE = 'bench-client';

/** A stateless MCP server (official SDK, JSON responses) with one cheap tool. */
async function startUpstream() {
  const app = Fastify({ logger: false });
  mountBenchMcp(app, { name: 'search_users', text: 'found 0' });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, url: `${url}/mcp` };
}

/** JWKS endpoint plus a signer for one RS256 key. */
async function startKeyManager() {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bench-1', alg: 'RS256', use: 'sig' };
  const app = Fastify({ logger: false });
  app.get('/jwks', async () => ({ keys: [jwk] }));
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  const token = await new SignJWT({ scope: 'internal_user_mgt_list', sub: 'bench' })
    .setProtectedHeader({ alg: 'RS256', kid: 'bench-1' })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setIssuedAt()
    .setExpirationTime('2h')
    .sign(privateKey);
  return { app, jwksUri: `${url}/jwks`, token };
}

async function run(url: string, headers: Record<string, string>) {
  const result = await autocannon({
    url,
    method: 'POST',
    connections: CONNECTIONS,
    duration: SECONDS,
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'search_users', arguments: {} },
    }),
  });
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${url}: ${result.non2xx} non-2xx responses, ${result.errors} errors`);
  }
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 };
}

/**
 * The upstream runs in its own process (this file with `--upstream`), so the gateway and the
 * MCP server do not share one event loop, as in a real deployment.
 */
async function spawnUpstream(): Promise<{ url: string; stop(): void }> {
  const child = spawn(
    process.execPath,
    [...process.execArgv, fileURLToPath(import.meta.url), '--upstream'],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const [line] = (await once(
    createInterface({ input: child.stdout as NodeJS.ReadableStream }),
    'line',
  )) as [string];
  return { url: line, stop: () => child.kill() };
}

if (process.argv.includes('--upstream')) {
  const upstream = await startUpstream();
  console.log(upstream.url);
} else {
  await main();
}

/**
 * nginx as a plain reverse proxy to the same upstream, when Debian's nginx is installed: the
 * reference for what any proxy hop costs, without authentication.
 */
async function startNginx(upstreamUrl: string): Promise<{ url: string; stop(): void } | undefined> {
  const binary = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((candidate) => existsSync(candidate));
  if (binary === undefined) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'gateway-bench-nginx-'));
  const port = await freePort();
  const upstream = new URL(upstreamUrl);
  writeFileSync(
    join(dir, 'nginx.conf'),
    `daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  upstream mcp { server ${upstream.host}; keepalive 32; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://mcp${upstream.pathname};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
`,
  );
  // nginx writes to its own error.log; inheriting our stdio would keep pipes open after we exit.
  const child = spawn(binary, ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: 'ignore' });
  try {
    await waitForPort(port);
  } catch (error) {
    child.kill('SIGKILL');
    const log = readFileSync(join(dir, 'error.log'), 'utf8');
    throw new Error(`nginx did not start: ${(error as Error).message}\n${log}`);
  }
  return {
    url: `http://127.0.0.1:${port}/`,
    stop: () => {
      child.kill('SIGQUIT');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  return port;
}

async function waitForPort(port: number): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const socket = connect(port, '127.0.0.1');
    const connected = await new Promise<boolean>((resolve) => {
      socket.once('connect', () => resolve(true));
      socket.once('error', () => resolve(false));
    });
    socket.destroy();
    if (connected) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`nothing listens on 127.0.0.1:${port}`);
}

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'gateway-bench-'));
  const upstream = await spawnUpstream();
  const km = await startKeyManager();
  const gateway = await startGateway({
    logger: createLogger({ level: 'silent', pretty: false }),
    settings: {
      data_dir: dataDir,
      listeners: { host: '127.0.0.1', https_port: 0, http_port: 0, management_port: 0 },
      management: {
        users: [{ username: 'admin', password_hash: await hashSecret('bench'), roles: ['admin'] }],
      },
      policy_configurations: {
        jwtauth_v1: {
          keymanagers: [{ name: 'idp', issuer: ISSUER, jwks: { remote: { uri: km.jwksUri } } }],
        },
      },
    },
  });

  try {
    const deployed = await fetch(`${gateway.managementUrl}/api/management/v1/mcp-proxies`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Basic ${Buffer.from('admin:bench').toString('base64')}`,
      },
      body: JSON.stringify({
        apiVersion: 'gateway.api-platform.vendor/v1',
        kind: 'Mcp',
        metadata: { name: 'bench-v1.0' },
        spec: {
          displayName: 'bench',
          version: 'v1.0',
          context: '/bench',
          specVersions: ['2025-06-18'],
          upstream: { url: upstream.url },
          policies: [
            {
              name: 'mcp-auth',
              version: 'v1',
              params: { issuers: ['idp'], audiences: [AUDIENCE] },
            },
            {
              name: 'mcp-authz',
              version: 'v1',
              params: {
                tools: [{ name: 'search_users', scopes: { allOf: ['internal_user_mgt_list'] } }],
              },
            },
          ],
        },
      }),
    });
    if (deployed.status !== 201) throw new Error(`deploy failed: ${deployed.status}`);

    const gatewayUrl = `${gateway.plainUrl}/bench/mcp`;
    const auth = { authorization: `Bearer ${km.token}` };
    await run(upstream.url, {}); // warm-up: JIT and keep-alive pools
    await run(gatewayUrl, auth);
    const direct = await run(upstream.url, {});
    const through = await run(gatewayUrl, auth);
    const nginx = await startNginx(upstream.url);
    const viaNginx = nginx ? await run(nginx.url, {}).finally(() => nginx.stop()) : undefined;

    const row = (name: string, r: typeof direct) =>
      `${name.padEnd(22)} ${r.rps.toFixed(0).padStart(8)} req/s   p50 ${String(r.p50).padStart(4)} ms   p99 ${String(r.p99).padStart(4)} ms`;
    console.log(`tools/call, ${CONNECTIONS} connections, ${SECONDS} s each, plain HTTP`);
    console.log(row('direct to upstream', direct));
    console.log(row('gateway (auth+authz)', through));
    if (viaNginx) console.log(row('nginx (plain proxy)', viaNginx));
    else console.log('nginx (plain proxy)    skipped: install Debian nginx for this reference row');
    console.log(
      `throughput ratio (gateway / direct): ${((through.rps / direct.rps) * 100).toFixed(1)}%`,
    );
    console.log(
      `added latency: p50 ${through.p50 - direct.p50} ms, p99 ${through.p99 - direct.p99} ms`,
    );
    if (viaNginx) {
      console.log(
        `nginx / direct: ${((viaNginx.rps / direct.rps) * 100).toFixed(1)}%, gateway / nginx: ${((through.rps / viaNginx.rps) * 100).toFixed(1)}%`,
      );
    }
  } finally {
    await gateway.close();
    upstream.stop();
    await km.app.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
