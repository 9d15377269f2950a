import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseCommandLine } from '@mcp-identity/arazzo-mcp';
import { TOKEN_EXCHANGE_GRANT } from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
import { loadConfigFile, validateDefinition } from '@mcp-identity/gateway';
import { describe, expect, it } from 'vitest';
import {
  delegatedMcpArgs,
  delegationBootstrap,
  GATEWAY_EXCHANGE_CLIENT_ID,
} from '../src/stack/delegation.js';
import { scimProxyDefinition, writeGatewayConfig } from '../src/stack/gateway-setup.js';
import { stackLayout } from '../src/stack/layout.js';
import { gatewayApiResources, stackBootstrap } from '../src/stack/sample-data.js';
import { loadOrCreateStackSecrets } from '../src/stack/secrets.js';
import { ensureUpstreamSecret } from '../src/stack/upstream-auth.js';
import { WIRING_PORTS } from './support/stack-helpers.js';

// What `up --delegation` writes and passes (issue 41); the default stays as wiring.test.ts pins.
const tempDir = useTempDir();
const ports = WIRING_PORTS;

describe('up --delegation', () => {
  it('deploys a proxy that exchanges tokens for the SCIM MCP server, which the gateway accepts', async () => {
    const dataDir = tempDir();
    const layout = stackLayout(dataDir, ports);
    const secrets = loadOrCreateStackSecrets(dataDir);
    ensureUpstreamSecret(layout.mcp.upstreamSecretFile);
    ensureUpstreamSecret(layout.mcp.exchangeSecretFile);
    mkdirSync(dirname(layout.caFile), { recursive: true });
    writeFileSync(layout.caFile, 'CA\n');
    await writeGatewayConfig(layout, secrets);
    const config = loadConfigFile(layout.gateway.configFile, {});
    const proxy = scimProxyDefinition(layout, secrets, { delegation: true }) as {
      spec: { upstream: unknown };
    };
    expect(proxy.spec.upstream).toEqual({
      url: 'http://127.0.0.1:15000/mcp',
      auth: { header: 'X-Gateway-Auth', secretRef: `file:${layout.mcp.upstreamSecretFile}` },
      tokenExchange: {
        tokenEndpoint: 'https://localhost:14443/oauth2/token',
        clientId: GATEWAY_EXCHANGE_CLIENT_ID,
        clientSecretRef: `file:${layout.mcp.exchangeSecretFile}`,
        resource: 'http://127.0.0.1:15000/mcp',
      },
    });
    const validation = validateDefinition(proxy, {
      keyManagers: config.keyManagers.map((km) => km.name),
      secrets: config.secrets,
      resolveSecrets: true,
    });
    expect(validation).toMatchObject({ ok: true });
    // No secret value is in the definition, only references.
    const exchangeSecret = readFileSync(layout.mcp.exchangeSecretFile, 'utf8').trim();
    expect(JSON.stringify(proxy)).not.toContain(exchangeSecret);
  });

  it('starts the SCIM MCP server checking the IdP tokens issued for its own URL', () => {
    const layout = stackLayout(tempDir(), ports);
    const command = parseCommandLine(
      ['serve', '--arazzo', 'scim.arazzo.yaml', ...delegatedMcpArgs(layout)],
      {},
    );
    expect(command).toMatchObject({
      name: 'serve',
      options: {
        delegatedAuth: {
          issuer: layout.idp.issuer,
          jwksUrl: layout.idp.jwksUrl,
          audience: 'http://127.0.0.1:15000/mcp',
        },
      },
    });
  });

  it('lets the gateway exchange the callers’ tokens and the backend exchange the gateway’s', () => {
    const dataDir = tempDir();
    const layout = stackLayout(dataDir, ports);
    const secrets = loadOrCreateStackSecrets(dataDir);
    const document = stackBootstrap(secrets, gatewayApiResources(layout));
    const delegated = delegationBootstrap(document, secrets, 'gateway-secret', layout) as {
      applications: Array<Record<string, unknown>>;
    };
    const byId = (id: string) => delegated.applications.find((app) => app.clientId === id);
    expect(byId(GATEWAY_EXCHANGE_CLIENT_ID)).toMatchObject({
      clientSecret: 'gateway-secret',
      grantTypes: [TOKEN_EXCHANGE_GRANT],
      tokenExchange: {
        subjectAudiences: gatewayApiResources(layout).map((resource) => resource.identifier),
        resources: ['http://127.0.0.1:15000/mcp'],
      },
    });
    expect(byId(secrets.backendApp.clientId)).toMatchObject({
      grantTypes: ['client_credentials', TOKEN_EXCHANGE_GRANT],
      tokenExchange: {
        subjectAudiences: ['http://127.0.0.1:15000/mcp'],
        resources: ['https://localhost:14443/scim2'],
      },
    });
    // The default bootstrap is left as it was.
    expect(document.applications?.some((app) => app.clientId === GATEWAY_EXCHANGE_CLIENT_ID)).toBe(
      false,
    );
  });
});
