/**
 * Runs the official MCP conformance suite (@modelcontextprotocol/conformance) against
 * `arazzo-mcp serve --auth builtin`, the checks an MCP client's authorization relies on:
 *
 *  1. starts the bin on a free port with a fresh data directory and the repository's SCIM
 *     workflows, and reads the first account's password from its output;
 *  2. obtains an access token through the authorization code flow (registration, the login
 *     form, PKCE, the token endpoint) — the way a user's MCP client would;
 *  3. `conformance server` for the applicable legacy-era server scenarios
 *     (CONFORMANCE_SERVER_SCENARIOS of @mcp-identity/common/testing), then every server scenario
 *     at the 2026-07-28 wire against the checks listed not applicable in
 *     test/fixtures/conformance-2026-07-28-not-applicable.yaml, through a loopback proxy that
 *     adds the Bearer token (the suite's client cannot send one);
 *  4. `conformance authorization` against the authorization server, when the installed suite
 *     has that command (0.2.0-alpha and later), driving the login form headlessly.
 *
 *   npx tsx packages/arazzo-mcp/scripts/conformance.ts [--verbose]
 *
 * Exit code 1 when any scenario that ran failed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONFORMANCE_SERVER_SCENARIOS, runConformance } from '@mcp-identity/common/testing';
import { submitLoginForm } from '@mcp-identity/oauth';
import {
  ANSI_COLOUR,
  CHECK_LINE,
  checkLines,
  modernScenarioArgs,
  type Outcome,
  obtainAccessToken,
  registerClient,
  type Started,
  startServer,
  startTokenProxy,
} from './conformance-support.js';

const CALLBACK_PORT = 3917;
const verbose = process.argv.includes('--verbose');
const conformance = (args: string[]) => runConformance(args, { verbose });

async function runServerScenarios(mcpUrl: string): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  for (const scenario of CONFORMANCE_SERVER_SCENARIOS) {
    const run = conformance(['server', '--url', mcpUrl, '--scenario', scenario]);
    const { code, output } = await run.done;
    console.log(`\n--- conformance server --scenario ${scenario} (exit ${code})`);
    for (const line of checkLines(output)) console.log(`  ${line}`);
    outcomes.push({ run: `server ${scenario}`, status: code === 0 ? 'PASS' : 'FAIL' });
  }
  const { code, output } = await conformance(modernScenarioArgs(mcpUrl)).done;
  console.log(`\n--- conformance server, every scenario at the 2026-07-28 wire (exit ${code})`);
  for (const line of checkLines(output)) console.log(`  ${line}`);
  outcomes.push({ run: 'server, 2026-07-28 wire', status: code === 0 ? 'PASS' : 'FAIL' });
  return outcomes;
}

/** Control: without the proxy the suite's client sends no token, so /mcp must refuse it. */
async function runUnauthenticatedControl(mcpUrl: string): Promise<Outcome> {
  const { code, output } = await conformance([
    'server',
    '--url',
    mcpUrl,
    '--scenario',
    'server-initialize',
  ]).done;
  console.log(
    `\n--- control: conformance server --scenario server-initialize, no token (exit ${code})`,
  );
  const reason = /^\s*Error: (.*)$/m.exec(output.replace(ANSI_COLOUR, ''))?.[1] ?? '';
  console.log(`  ${reason}`);
  return {
    run: 'control: server-initialize without a token is refused (invalid_token)',
    status: code !== 0 && reason.includes('invalid_token') ? 'PASS' : 'FAIL',
  };
}

async function hasAuthorizationCommand(): Promise<boolean> {
  const { output } = await conformance(['--help']).done;
  return /^\s+authorization\b/m.test(output);
}

/**
 * `conformance authorization` (all its scenarios in one run: the code-grant scenario reads the
 * metadata the metadata scenario fetched). The suite prints an authorization URL and waits for
 * a browser to reach its callback; here the login form is filled over HTTP and the redirect
 * followed to that callback.
 */
async function runAuthorizationScenarios(server: Started): Promise<Outcome[]> {
  if (!(await hasAuthorizationCommand())) {
    const note =
      'the installed @modelcontextprotocol/conformance has no `authorization` command (it came with 0.2.0-alpha)';
    console.log(`\n--- conformance authorization: SKIPPED: ${note}`);
    return [{ run: 'authorization (all scenarios)', status: 'SKIPPED', note }];
  }
  const clientId = await registerClient(server, `http://127.0.0.1:${CALLBACK_PORT}/callback`);
  const run = conformance([
    'authorization',
    '--url',
    server.url,
    '--client-id',
    clientId,
    '--resource',
    `${server.url}/mcp`,
    '-p',
    String(CALLBACK_PORT),
  ]);
  let driverError: string | undefined;
  const watch = () => {
    const url = /^\s*(http\S+\/oauth\/authorize\?\S+)\s*$/m.exec(run.output())?.[1];
    if (url === undefined) return;
    run.child.stdout?.off('data', watch);
    submitLoginForm(url, server)
      .then((redirect) => fetch(redirect))
      .catch((error: unknown) => {
        driverError = (error as Error).message;
        run.child.kill('SIGTERM');
      });
  };
  run.child.stdout?.on('data', watch);
  const { code, output } = await run.done;
  console.log(`\n--- conformance authorization (exit ${code})`);
  const lines = checkLines(output);
  for (const line of lines) console.log(`  ${line}`);
  if (driverError !== undefined) {
    return [{ run: 'authorization', status: 'FAIL', note: `login driver: ${driverError}` }];
  }
  const checks = lines.flatMap((line) => {
    const match = CHECK_LINE.exec(line);
    return match && match[2] !== 'INFO' ? [{ id: match[1] ?? '', status: match[2] ?? '' }] : [];
  });
  // Several scenarios in one run report one summary line each instead of per-check lines.
  for (const [, mark, id = '', failed] of output.matchAll(
    /^([✓✗]) ([\w-]+): \d+ passed, (\d+) failed/gm,
  )) {
    checks.push({ id, status: mark === '✓' && failed === '0' ? 'SUCCESS' : 'FAILURE' });
  }
  const outcomes: Outcome[] = checks.map(({ id, status }) => ({
    run: `authorization ${id}`,
    status: status === 'FAILURE' ? 'FAIL' : status === 'SKIPPED' ? 'SKIPPED' : 'PASS',
    note: status === 'WARNING' ? 'warning' : undefined,
  }));
  if (code !== 0 && !outcomes.some((outcome) => outcome.status === 'FAIL')) {
    outcomes.push({ run: 'authorization', status: 'FAIL', note: `exit code ${code}` });
  }
  return outcomes;
}

async function main(): Promise<number> {
  const dataDir = mkdtempSync(join(tmpdir(), 'arazzo-mcp-conformance-'));
  let server: Started | undefined;
  let proxy: Server | undefined;
  try {
    server = await startServer(dataDir);
    console.log(`arazzo-mcp serve --auth builtin at ${server.url}`);
    const token = await obtainAccessToken(server);
    console.log('access token obtained through the authorization code flow (PKCE S256)');
    proxy = await startTokenProxy(server.url, token);
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const outcomes = [
      await runUnauthenticatedControl(`${server.url}/mcp`),
      ...(await runServerScenarios(`${proxyUrl}/mcp`)),
      ...(await runAuthorizationScenarios(server)),
    ];
    console.log('\n=== Conformance summary ===');
    for (const { run, status, note } of outcomes) {
      console.log(`${status.padEnd(8)} ${run}${note ? ` (${note})` : ''}`);
    }
    return outcomes.some((outcome) => outcome.status === 'FAIL') ? 1 : 0;
  } finally {
    proxy?.close();
    server?.child.kill('SIGTERM');
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(`conformance run failed: ${(error as Error).message}`);
    process.exitCode = 1;
  },
);
