import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { useTempDir } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  conformance,
  obtainAccessToken,
  SERVER_SCENARIOS,
  type Started,
  startServer,
  startTokenProxy,
} from '../scripts/conformance-support.js';

/*
 * The official MCP conformance suite's server scenarios against `serve --auth builtin` (Area
 * A) with the SCIM workflows, signed in through the authorization code flow; the same run as
 * `npm run conformance`, minus its authorization scenarios (which need a fixed callback port).
 *
 * Applicable, and passing: server-initialize, server-session-lifecycle, ping, tools-list,
 * server-sse-multiple-streams, dns-rebinding-protection.
 *
 * Not applicable:
 * - logging-set-level, completion-complete, resources-*, prompts-*: the server declares only
 *   the `tools` capability (MCP lifecycle: a client must not use undeclared capabilities).
 * - tools-call-simple-text, -image, -audio, -embedded-resource, -mixed-content, -with-logging,
 *   -error, -with-progress, -sampling, -elicitation, json-schema-2020-12,
 *   elicitation-sep1034-defaults, elicitation-sep1330-enums, server-sse-polling: they call the
 *   suite's own fixture tools (`test_simple_text`, `test_reconnection`, …), which only its
 *   reference server has; our tools are the workflows'.
 * - server-stateless, caching, http-header-validation, http-custom-header-server-validation,
 *   sep-2164-resource-not-found, input-required-result-*: the 2026-07-28 draft, which the
 *   server does not speak (it negotiates 2025-06-18 and 2025-11-25).
 * - tasks-*, sep-2640-skills-*: extensions the server does not implement.
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
    const { code, output } = await conformance([
      'server',
      '--url',
      `${server.url}/mcp`,
      '--scenario',
      'server-initialize',
    ]).done;
    expect(code).not.toBe(0);
    expect(output).toContain('invalid_token');
  }, 60_000);

  it.each(SERVER_SCENARIOS)(
    'passes %s',
    async (scenario) => {
      const { code, output } = await conformance([
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
