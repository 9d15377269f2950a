/**
 * The pieces of the conformance run against `arazzo-mcp serve --auth builtin` that both the
 * script (`npm run conformance`) and the test (test/conformance.test.ts) use.
 */
import type { ChildProcess } from 'node:child_process';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { obtainTokenWithLoginForm } from '@mcp-identity/oauth';
import { spawnServe } from '../test/support/serve-bin.js';

export const WORKFLOWS = fileURLToPath(
  new URL('../../../workflows/scim/scim.arazzo.yaml', import.meta.url),
);
/** The suite's checks that do not apply to our servers at the 2026-07-28 wire, and why. */
const MODERN_NOT_APPLICABLE = fileURLToPath(
  new URL('../test/fixtures/conformance-2026-07-28-not-applicable.yaml', import.meta.url),
);

/**
 * `conformance` arguments running every server scenario of the 2026-07-28 revision (pending
 * ones included: `http-header-validation` is one) at that wire against `mcpUrl`; the run fails
 * on any failing or warning check MODERN_NOT_APPLICABLE does not list, and on an entry of it
 * that passes.
 */
export function modernScenarioArgs(mcpUrl: string): string[] {
  return [
    'server',
    '--url',
    mcpUrl,
    '--suite',
    'all',
    '--spec-version',
    '2026-07-28',
    '--expected-failures',
    MODERN_NOT_APPLICABLE,
  ];
}
const EMAIL = 'conformance@localhost';
export const ANSI_COLOUR = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g');

export interface Outcome {
  run: string;
  status: 'PASS' | 'FAIL' | 'SKIPPED';
  note?: string;
}

export interface Started {
  url: string;
  email: string;
  password: string;
  child: ChildProcess;
}

/** `serve --auth builtin` on a free port; resolves once it listens. */
export async function startServer(dataDir: string): Promise<Started> {
  const served = await spawnServe(
    [
      '--auth',
      'builtin',
      '--arazzo',
      WORKFLOWS,
      '--port',
      '0',
      '--data-dir',
      dataDir,
      '--admin-email',
      EMAIL,
    ],
    {},
  );
  const password = /Password \(shown only this once\): (\S+)/.exec(served.stdout())?.[1];
  if (password === undefined) {
    await served.stop();
    throw new Error(`the server printed no first-account password:\n${served.stdout()}`);
  }
  return { url: served.url, email: EMAIL, password, child: served.child };
}

export async function registerClient(server: Started, redirectUri: string): Promise<string> {
  const response = await fetch(`${server.url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: [redirectUri] }),
  });
  if (response.status !== 200) throw new Error(`registration answered ${response.status}`);
  return ((await response.json()) as { client_id: string }).client_id;
}

/** An access token with `mcp:tools` through the full authorization code flow with PKCE. */
export async function obtainAccessToken(server: Started): Promise<string> {
  return (await obtainTokenWithLoginForm(server.url, server)).accessToken;
}

/**
 * Forwards every request to the server with `Authorization: Bearer <token>` added. `Host` is
 * rewritten to the server's, which is the issuer the token was minted for.
 */
export async function startTokenProxy(target: string, token: string): Promise<Server> {
  const upstream = new URL(target);
  const proxy = createServer((incoming, outgoing) => {
    const forwarded = httpRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: incoming.method,
        path: incoming.url,
        headers: { ...incoming.headers, host: upstream.host, authorization: `Bearer ${token}` },
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forwarded.on('error', () => {
      outgoing.writeHead(502).end();
    });
    incoming.pipe(forwarded);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return proxy;
}

/** The suite's own per-check lines (`[check-id] STATUS …`) and its totals, for the report. */
// A check's line: `[<check id>] <STATUS> …`, the id padded to a column in newer suites.
export const CHECK_LINE = /\[([\w-]+)\s*\]\s+(SUCCESS|FAILURE|WARNING|INFO|SKIPPED)/;

export function checkLines(output: string): string[] {
  const plain = output.replace(ANSI_COLOUR, '');
  return plain
    .split('\n')
    .filter((line) => CHECK_LINE.test(line) || /Passed: \d+|^[✓✗] [\w-]+: \d+ passed/.test(line))
    .map((line) => line.trim());
}
