import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { useTempDir } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayFixture, proxyDefinition, startTestGateway } from './fixtures/gateway.js';
import { startUpstream, type Upstream } from './fixtures/upstream.js';

const tempDir = useTempDir('gw-conformance-');
const REPOSITORY = fileURLToPath(new URL('../../../', import.meta.url));
const CONFORMANCE = `${REPOSITORY}node_modules/@modelcontextprotocol/conformance/dist/index.js`;
/** The suite imports Node 22's fs.globSync (only for tier-check); Node 20 needs the shim. */
const FS_SHIM = `${REPOSITORY}packages/arazzo-mcp/scripts/node20-fs-shim.mjs`;

/**
 * Server scenarios of the official MCP conformance suite that concern the gateway itself
 * (transport, lifecycle, DNS rebinding) rather than the upstream's own tools.
 *
 * Not applicable to the gateway: the scenarios of capabilities (logging, completions,
 * resources, prompts) and of the suite's fixture tools (tools-call-*, json-schema-2020-12,
 * elicitation-*, server-sse-polling's `test_reconnection`) test the upstream MCP server,
 * which the gateway relays unchanged; the 2026-07-28 draft's scenarios (server-stateless,
 * caching, http-header-validation, …) and the extensions (tasks-*, sep-2640-*) are outside
 * the specVersions a proxy can list.
 */
const SCENARIOS = [
  'server-initialize',
  'server-session-lifecycle',
  'ping',
  'tools-list',
  'server-sse-multiple-streams',
  'dns-rebinding-protection',
];

function runScenario(url: string, scenario: string) {
  return new Promise<{ code: number | null; output: string }>((resolve) => {
    const child = spawn(
      process.execPath,
      ['--import', FS_SHIM, CONFORMANCE, 'server', '--url', url, '--scenario', scenario],
      { cwd: tempDir(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.on('exit', (code) => resolve({ code, output }));
  });
}

describe('MCP conformance suite against a gateway proxy', () => {
  let upstream: Upstream;
  let fx: GatewayFixture;

  beforeAll(async () => {
    upstream = await startUpstream();
    fx = await startTestGateway({ dataDir: tempDir() });
    const definition = proxyDefinition('open-v1.0', '/open', upstream.mcpUrl);
    expect((await fx.deploy(definition)).status).toBe(201);
  });
  afterAll(async () => {
    await fx?.gateway.close();
    await upstream?.close();
  });

  it.each(SCENARIOS)(
    'passes %s',
    async (scenario) => {
      const { code, output } = await runScenario(`${fx.gateway.plainUrl}/open/mcp`, scenario);
      expect(code, output).toBe(0);
    },
    60_000,
  );
});
