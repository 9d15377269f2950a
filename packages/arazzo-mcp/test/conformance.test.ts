import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startArazzoMcpHttp } from '@mcp-identity/arazzo-mcp';
import { createLogger, type RunningServer } from '@mcp-identity/common';
import {
  CONFORMANCE_SERVER_SCENARIOS,
  runConformance,
  useTempDir,
} from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  modernScenarioArgs,
  obtainAccessToken,
  type Started,
  startServer,
  startTokenProxy,
  WORKFLOWS,
} from '../scripts/conformance-support.js';

/*
 * The official MCP conformance suite's server scenarios against `serve --auth builtin` (Area
 * A) with the SCIM workflows, signed in through the authorization code flow; the same run as
 * `npm run conformance`, minus its authorization scenarios (which need a fixed callback port).
 *
 * The legacy-era scenarios, and why the suite's others are not applicable there:
 * CONFORMANCE_SERVER_SCENARIOS in @mcp-identity/common/testing. At the 2026-07-28 wire every
 * scenario runs, against the checks listed not applicable in
 * fixtures/conformance-2026-07-28-not-applicable.yaml.
 */
const tempDir = useTempDir('arazzo-mcp-conformance-');

describe('MCP conformance suite against serve --auth builtin', () => {
  let server: Started;
  let proxy: Server;
  let proxiedMcpUrl: string;

  beforeAll(async () => {
    server = await startServer(tempDir());
    // The suite's client cannot sign in: a loopback proxy adds the user's token.
    proxy = await startTokenProxy(server.url, await obtainAccessToken(server));
    proxiedMcpUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/mcp`;
  }, 90_000);

  afterAll(() => {
    proxy?.close();
    server?.child.kill('SIGTERM');
  });

  it('refuses the suite without a token (the control)', async () => {
    const { code, output } = await runConformance([
      'server',
      '--url',
      `${server.url}/mcp`,
      '--scenario',
      'server-initialize',
    ]).done;
    expect(code).not.toBe(0);
    expect(output).toContain('invalid_token');
  }, 60_000);

  it('passes every applicable scenario at the 2026-07-28 wire', async () => {
    const { code, output } = await runConformance(modernScenarioArgs(proxiedMcpUrl)).done;
    expect(code, output).toBe(0);
    expect(output).toContain('Baseline check passed');
  }, 60_000);

  it.each(CONFORMANCE_SERVER_SCENARIOS)(
    'passes %s',
    async (scenario) => {
      const { code, output } = await runConformance([
        'server',
        '--url',
        proxiedMcpUrl,
        '--scenario',
        scenario,
      ]).done;
      expect(code, output).toBe(0);
    },
    60_000,
  );
});

// Without authentication POST /mcp is served before Fastify (mcp-front.ts): the other path to
// the same exchanges.
describe('MCP conformance suite against serve (the SCIM MCP server, no authentication)', () => {
  let server: RunningServer;

  beforeAll(async () => {
    server = await startArazzoMcpHttp({
      arazzo: WORKFLOWS,
      port: 0,
      handleSignals: false,
      env: {},
      logger: createLogger({ level: 'silent', pretty: false }),
    });
  });

  afterAll(() => server?.close());

  it('passes every applicable scenario at the 2026-07-28 wire', async () => {
    const { code, output } = await runConformance(modernScenarioArgs(`${server.url}/mcp`)).done;
    expect(code, output).toBe(0);
    expect(output).toContain('Baseline check passed');
  }, 60_000);
});
