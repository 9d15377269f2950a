import {
  CONFORMANCE_SERVER_SCENARIOS,
  runConformance,
  useTempDir,
} from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayFixture, proxyDefinition, startTestGateway } from './fixtures/gateway.js';
import { startUpstream, type Upstream } from './fixtures/upstream.js';

const tempDir = useTempDir('gw-conformance-');

/*
 * The official MCP conformance suite's server scenarios that concern the gateway itself
 * (transport, lifecycle, DNS rebinding) rather than the upstream's own tools; the others test
 * the upstream MCP server, which the gateway relays unchanged, or protocol versions a proxy
 * cannot list (CONFORMANCE_SERVER_SCENARIOS in @mcp-identity/common/testing says which and why).
 */
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

  it.each(CONFORMANCE_SERVER_SCENARIOS)(
    'passes %s',
    async (scenario) => {
      const args = ['server', '--url', `${fx.gateway.plainUrl}/open/mcp`, '--scenario', scenario];
      const { code, output } = await runConformance(args, { cwd: tempDir() }).done;
      expect(code, output).toBe(0);
    },
    60_000,
  );
});
