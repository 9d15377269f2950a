import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { useTempDir } from '@mcp-identity/common/testing';
import { loadConfigFile, validateDefinition } from '@mcp-identity/gateway';
import { describe, expect, it } from 'vitest';
import { gatewayRuleScopes } from '../src/stack/gateway-rules.js';
import { scimProxyDefinition, writeGatewayConfig } from '../src/stack/gateway-setup.js';
import { stackLayout } from '../src/stack/layout.js';
import { gatewayApiResources, READ_ONLY_SCOPES, stackBootstrap } from '../src/stack/sample-data.js';
import { loadOrCreateStackSecrets } from '../src/stack/secrets.js';
import {
  ensureUpstreamSecret,
  requireHeaderArgs,
  UPSTREAM_AUTH_HEADER,
} from '../src/stack/upstream-auth.js';
import { WIRING_PORTS } from './support/stack-helpers.js';

// What `up` writes and passes to the other services: the upstream credential and
// the IdP's API resources. These assertions pin the CLI's side.
const tempDir = useTempDir();
const ports = WIRING_PORTS;

describe('the gateway → SCIM MCP server credential', () => {
  it('is one random secret, readable by its owner only, generated once', () => {
    const layout = stackLayout(tempDir(), ports);
    const file = ensureUpstreamSecret(layout.mcp.upstreamSecretFile);
    const secret = readFileSync(file, 'utf8');
    expect(secret).toMatch(/^[\w-]{40,}\n$/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    ensureUpstreamSecret(file);
    expect(readFileSync(file, 'utf8')).toBe(secret);
  });

  it('is required by the SCIM MCP server and sent by the proxy, both from the file', () => {
    const dataDir = tempDir();
    const layout = stackLayout(dataDir, ports);
    const file = layout.mcp.upstreamSecretFile;
    expect(UPSTREAM_AUTH_HEADER).toBe('X-Gateway-Auth');
    expect(requireHeaderArgs(file)).toEqual([
      '--require-header',
      'X-Gateway-Auth',
      '--require-header-file',
      file,
    ]);
    const secrets = loadOrCreateStackSecrets(dataDir);
    const proxy = scimProxyDefinition(layout, secrets) as {
      spec: { upstream: unknown };
    };
    expect(proxy.spec.upstream).toEqual({
      url: 'http://127.0.0.1:15000/mcp',
      auth: { header: 'X-Gateway-Auth', secretRef: `file:${file}` },
    });
    // The secret value itself never appears in the proxy definition.
    ensureUpstreamSecret(file);
    expect(JSON.stringify(proxy)).not.toContain(readFileSync(file, 'utf8').trim());
  });

  it('is a file the gateway configuration `up` writes allows its secretRef to read', async () => {
    const dataDir = tempDir();
    const layout = stackLayout(dataDir, ports);
    const secrets = loadOrCreateStackSecrets(dataDir);
    ensureUpstreamSecret(layout.mcp.upstreamSecretFile);
    // The key manager's CA file is read with the configuration; its content does not matter here.
    mkdirSync(dirname(layout.caFile), { recursive: true });
    writeFileSync(layout.caFile, 'CA\n');
    await writeGatewayConfig(layout, secrets);
    const config = loadConfigFile(layout.gateway.configFile, {});
    expect(config.secrets.directory).toBe(dirname(layout.mcp.upstreamSecretFile));
    const validation = validateDefinition(scimProxyDefinition(layout, secrets), {
      keyManagers: config.keyManagers.map((km) => km.name),
      secrets: config.secrets,
      resolveSecrets: true,
    });
    expect(validation).toMatchObject({ ok: true });
  });
});

describe('the SCIM proxy `up` deploys', () => {
  it('serves the modern era (2026-07-28) beside the legacy 2025-11-25 and 2025-06-18', () => {
    const dataDir = tempDir();
    const proxy = scimProxyDefinition(
      stackLayout(dataDir, ports),
      loadOrCreateStackSecrets(dataDir),
    ) as { spec: { specVersions: string[] } };
    expect(proxy.spec.specVersions).toEqual(['2025-06-18', '2025-11-25', '2026-07-28']);
  });

  it("filters tools/list by the caller's permission (the rules of gateway-rules.yaml)", () => {
    const dataDir = tempDir();
    const proxy = scimProxyDefinition(
      stackLayout(dataDir, ports),
      loadOrCreateStackSecrets(dataDir),
    ) as { spec: { policies: Array<{ name: string; params: Record<string, unknown> }> } };
    const authz = proxy.spec.policies.find((policy) => policy.name === 'mcp-authz');
    expect(authz?.params.filterLists).toBe(true);
  });
});

describe('API resources and the read-only user', () => {
  it('declares one API resource per gateway listener and loopback spelling, offering the rules’ scopes, to no application', () => {
    const layout = stackLayout(tempDir(), ports);
    const resources = gatewayApiResources(layout);
    expect(resources.map((resource) => resource.identifier)).toEqual([
      'https://localhost:18443/scim/mcp',
      'https://127.0.0.1:18443/scim/mcp',
      'https://[::1]:18443/scim/mcp',
      'http://localhost:18080/scim/mcp',
      'http://127.0.0.1:18080/scim/mcp',
      'http://[::1]:18080/scim/mcp',
    ]);
    for (const resource of resources) {
      expect(resource.scopes).toEqual(gatewayRuleScopes());
      expect(resource.scopes).toEqual(
        expect.arrayContaining(['internal_user_mgt_list', 'internal_user_mgt_delete']),
      );
      expect(resource.dynamicClients).toBe(true);
      expect(resource.applications).toEqual([]);
    }
  });

  it('bootstraps a read-only user whose only role grants list and view', () => {
    const dataDir = tempDir();
    const secrets = loadOrCreateStackSecrets(dataDir);
    const resources = gatewayApiResources(stackLayout(dataDir, ports));
    const bootstrap = stackBootstrap(secrets, resources);
    expect(bootstrap.apiResources).toEqual(resources);
    const { userName, password } = secrets.readOnlyUser;
    expect(bootstrap.users?.find((user) => user.userName === userName)).toMatchObject({
      password,
    });
    const roles = bootstrap.roles?.filter((role) => role.users?.includes(userName)) ?? [];
    expect(roles.map((role) => role.permissions)).toEqual([READ_ONLY_SCOPES]);
  });
});
