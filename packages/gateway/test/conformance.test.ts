import { fileURLToPath } from 'node:url';
import {
  CONFORMANCE_SERVER_SCENARIOS,
  runConformance,
  useTempDir,
} from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DualEraUpstream, startDualEraUpstream } from './fixtures/dual-era-upstream.js';
import { type GatewayFixture, proxyDefinition, startTestGateway } from './fixtures/gateway.js';
import { startUpstream, type Upstream } from './fixtures/upstream.js';

const tempDir = useTempDir('gw-conformance-');

/*
 * The official MCP conformance suite's server scenarios that concern the gateway itself
 * (transport, lifecycle, DNS rebinding) rather than the upstream's own tools; the others test
 * the upstream MCP server, which the gateway relays unchanged, or protocol versions a proxy
 * cannot list (CONFORMANCE_SERVER_SCENARIOS in @mcp-identity/common/testing says which and why).
 * At the 2026-07-28 wire every scenario runs, in front of an upstream of both eras, against the
 * checks listed not applicable in fixtures/conformance-2026-07-28-not-applicable.yaml.
 */
describe('MCP conformance suite against a gateway proxy', () => {
  let upstream: Upstream;
  let dualEra: DualEraUpstream;
  let fx: GatewayFixture;

  beforeAll(async () => {
    [upstream, dualEra] = await Promise.all([startUpstream(), startDualEraUpstream()]);
    fx = await startTestGateway({ dataDir: tempDir() });
    const definition = proxyDefinition('open-v1.0', '/open', upstream.mcpUrl);
    // Every version the gateway supports (no `specVersions`): both eras at one URL.
    const both = proxyDefinition('both-v1.0', '/both', dualEra.mcpUrl);
    delete (both.spec as Record<string, unknown>).specVersions;
    for (const d of [definition, both]) expect((await fx.deploy(d)).status).toBe(201);
  });
  afterAll(async () => {
    await fx?.gateway.close();
    await Promise.all([upstream?.close(), dualEra?.close()]);
  });

  it('passes every applicable scenario at the 2026-07-28 wire', async () => {
    const notApplicable = fileURLToPath(
      new URL('./fixtures/conformance-2026-07-28-not-applicable.yaml', import.meta.url),
    );
    const args = [
      'server',
      '--url',
      `${fx.gateway.plainUrl}/both/mcp`,
      '--suite',
      'all',
      '--spec-version',
      '2026-07-28',
      '--expected-failures',
      notApplicable,
    ];
    const { code, output } = await runConformance(args, { cwd: tempDir() }).done;
    expect(code, output).toBe(0);
    expect(output).toContain('Baseline check passed');
  }, 60_000);

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
