import { createLogger, hashSecret } from '@mcp-identity/common';
import {
  describeRequiring,
  type FixedUpstream,
  nginxMissing,
  startFixedUpstream,
  startLoadBalancer,
  type TestLoadBalancer,
  useTempDir,
} from '@mcp-identity/common/testing';
import { type RunningGateway, startGateway } from '@mcp-identity/gateway';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ADMIN_PASSWORD, managementApi, proxyDefinition } from './fixtures/gateway.js';
import { MCP_POST_HEADERS, rawRequest } from './fixtures/mcp-client.js';

const tempDir = useTempDir('gw-public-url-');
/** The address clients use: the load balancer's public name (docs/deploy.md's `gatewayurl`). */
const PUBLIC = 'https://mcp.example.test';
const RESOURCE = `${PUBLIC}/scim/mcp`;
const PRM = `${PUBLIC}/scim/.well-known/oauth-protected-resource`;
const PING = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
const AUTH = { name: 'mcp-auth', version: 'v1', params: { audiences: ['mcp-client-app'] } };

async function startInstance(): Promise<RunningGateway> {
  const gateway = await startGateway({
    settings: {
      data_dir: tempDir(),
      listeners: { host: '127.0.0.1', https_port: 0, http_port: 0, management_port: 0 },
      management: {
        users: [
          { username: 'admin', password_hash: await hashSecret(ADMIN_PASSWORD), roles: ['admin'] },
        ],
      },
      policy_configurations: { mcpauth_v1: { gatewayurl: PUBLIC } },
    },
    logger: createLogger({ level: 'silent', pretty: false }),
  });
  return gateway;
}

describeRequiring('two gateways behind nginx', nginxMissing(), () => {
  let upstream: FixedUpstream;
  let balancer: TestLoadBalancer;
  const gateways: RunningGateway[] = [];

  beforeAll(async () => {
    upstream = await startFixedUpstream();
    for (let i = 0; i < 2; i += 1) {
      const gateway = await startInstance();
      gateways.push(gateway);
      // Each instance has its own SQLite store here: the same proxy is deployed to both.
      const definition = proxyDefinition('scim', '/scim', upstream.mcpUrl, [AUTH]);
      expect((await managementApi(gateway.managementUrl).deploy(definition)).status).toBe(201);
    }
    // The guide's topology: nginx in front of each instance's plain HTTP listener.
    balancer = await startLoadBalancer({
      backends: gateways.map((g) => new URL(g.plainUrl).host),
    });
  }, 30_000);

  afterAll(async () => {
    await balancer?.close();
    await Promise.all(gateways.map((g) => g.close()));
    await upstream?.close();
  });

  it('serves protected resource metadata naming gatewayurl on every instance', async () => {
    // Round robin: four requests reach each instance twice.
    for (let i = 0; i < 4; i += 1) {
      const response = await fetch(`${balancer.url}/.well-known/oauth-protected-resource/scim/mcp`);
      expect(response.status).toBe(200);
      expect(((await response.json()) as { resource: string }).resource).toBe(RESOURCE);
    }
    // Each instance itself, with the Host nginx forwards ($http_host: the balancer's).
    for (const gateway of gateways) {
      const response = await rawRequest(
        `${gateway.plainUrl}/scim/.well-known/oauth-protected-resource`,
        'GET',
        {
          host: new URL(balancer.url).host,
        },
      );
      expect(JSON.parse(response.body)).toMatchObject({ resource: RESOURCE });
    }
  });

  it('names gatewayurl in every challenge through the balancer', async () => {
    for (let i = 0; i < 4; i += 1) {
      const response = await fetch(`${balancer.url}/scim/mcp`, {
        method: 'POST',
        headers: MCP_POST_HEADERS,
        body: PING,
      });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toContain(`resource_metadata="${PRM}"`);
    }
  });

  it('still names its own address to a client on the listener itself', async () => {
    const [gateway] = gateways as [RunningGateway];
    const response = await fetch(
      `${gateway.plainUrl}/.well-known/oauth-protected-resource/scim/mcp`,
    );
    const { resource } = (await response.json()) as { resource: string };
    expect(resource).toBe(`${gateway.plainUrl}/scim/mcp`);
  });
});
