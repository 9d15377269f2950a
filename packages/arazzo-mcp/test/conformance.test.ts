import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  CONFORMANCE_SERVER_SCENARIOS,
  runConformance,
  useTempDir,
} from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  obtainAccessToken,
  type Started,
  startServer,
  startTokenProxy,
} from '../scripts/conformance-support.js';

/*
 * The official MCP conformance suite's server scenarios against `serve --auth builtin` (Area
 * A) with the SCIM workflows, signed in through the authorization code flow; the same run as
 * `npm run conformance`, minus its authorization scenarios (which need a fixed callback port).
 *
 * The scenarios, and why the suite's others are not applicable: CONFORMANCE_SERVER_SCENARIOS in
 * @mcp-identity/common/testing.
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
