import { type FixedUpstream, startFixedUpstream, useTempDir } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify as stringifyYaml } from 'yaml';
import { proxyDefinition } from './fixtures/gateway.js';
import {
  type GatewayProcess,
  startGatewayProcess,
  writeGatewayConfig,
} from './fixtures/gateway-process.js';

const tempDir = useTempDir('gw-definition-size-');
const BASE = '/api/management/v1/mcp-proxies';
const MiB = 1024 * 1024;

/** A valid definition in YAML, with `tools` written as given (aliases included). */
function yamlDefinition(name: string, upstreamUrl: string, tools: string): string {
  const definition = proxyDefinition(name, `/${name}`, upstreamUrl);
  (definition.spec as Record<string, unknown>).tools = '@TOOLS@';
  return stringifyYaml(definition).replace('tools: "@TOOLS@"', `tools: ${tools}`);
}

describe('YAML aliases in definitions', () => {
  let gateway: GatewayProcess;
  let upstream: FixedUpstream;

  const post = (body: string) =>
    gateway.management(BASE, {
      method: 'POST',
      headers: { 'content-type': 'application/yaml' },
      body,
    });

  beforeAll(async () => {
    upstream = await startFixedUpstream();
    gateway = await startGatewayProcess(await writeGatewayConfig(tempDir()));
  });
  afterAll(async () => {
    await gateway?.stop();
    await upstream?.close();
  });

  it('refuses a 400 KB anchor referenced 99 times with 400, without the gateway growing', async () => {
    const anchor = `&big {name: big, description: "${'x'.repeat(400 * 1024)}"}`;
    const tools = `[${anchor}${', *big'.repeat(98)}]`;
    const body = yamlDefinition('laughs', upstream.mcpUrl, tools);
    expect(body.length).toBeLessThan(MiB);
    const before = gateway.rss();
    const response = await post(body);
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      status: 'error',
      message:
        'the definition expands to more than 1048576 bytes through its YAML aliases (*name); repeat less of it',
    });
    // 99 copies would be about 40 MB of JSON to store and to answer with.
    expect(gateway.rss() - before).toBeLessThan(16 * MiB);
    expect((await gateway.management(`${BASE}/laughs`)).status).toBe(404);
  });

  it('refuses nested aliases (billion laughs) too, by the bound of the parser itself', async () => {
    const levels = ['&l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]'];
    for (let i = 1; i < 9; i += 1) {
      levels.push(
        `&l${i} [${Array(9)
          .fill(`*l${i - 1}`)
          .join(', ')}]`,
      );
    }
    // The laughs go where a definition has room for any value: a tool's input schema.
    const laughs = yamlDefinition(
      'nested',
      upstream.mcpUrl,
      `[{name: lol, inputSchema: {levels: [${levels.join(', ')}]}}]`,
    );
    const response = await post(laughs);
    expect(response.status).toBe(400);
    // The parser's own bound (yaml's maxAliasCount) stops this one before anything expands.
    expect(((await response.json()) as { message: string }).message).toBe(
      'request body is not valid YAML or JSON: Excessive alias count indicates a resource exhaustion attack',
    );
  });

  it('still accepts a definition that uses aliases within the size', async () => {
    const tools = '[&tool {name: search_users, description: "Search"}, *tool]';
    const response = await post(yamlDefinition('small-aliases', upstream.mcpUrl, tools));
    expect(response.status).toBe(201);
    const stored = (await response.json()) as { spec: { tools: unknown[] } };
    expect(stored.spec.tools).toEqual([
      { name: 'search_users', description: 'Search' },
      { name: 'search_users', description: 'Search' },
    ]);
  });
});
