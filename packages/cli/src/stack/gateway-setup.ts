import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { hashSecret, UnexpectedResponseError } from '@mcp-identity/common';
import { stringify as stringifyToml } from 'smol-toml';
import { stringify as stringifyYaml } from 'yaml';
import { upstreamTokenExchange } from './delegation.js';
import { gatewayRules } from './gateway-rules.js';
import { PROXY_CONTEXT, type StackLayout } from './layout.js';
import { fetchNamingUrl } from './network.js';
import type { StackSecrets } from './secrets.js';
import { upstreamAuth } from './upstream-auth.js';

/** The name of the SCIM proxy the stack deploys (its management API path). */
export const PROXY_NAME = 'scim-v1.0';
/** The embedded IdP's entry among the gateway's key managers, the proxy's one issuer. */
const KEY_MANAGER_NAME = 'embedded-idp';

/**
 * The gateway's TOML configuration: its listeners on loopback, the admin user, the
 * directory of the upstream secret as the only one its `secretRef`s may read,
 * and the embedded identity provider as key manager
 * (`policy_configurations.jwtauth_v1.keymanagers`). The IdP's self-signed
 * certificate is trusted by path rather than skipping verification.
 */
export async function writeGatewayConfig(
  layout: StackLayout,
  secrets: StackSecrets,
): Promise<void> {
  const config = {
    data_dir: layout.gateway.dataDir,
    listeners: {
      host: '127.0.0.1',
      management_host: '127.0.0.1',
      https_port: layout.ports.gatewayHttps,
      http_port: layout.ports.gatewayHttp,
      management_port: layout.ports.gatewayManagement,
    },
    // The upstream credential's file (the /scim proxy's secretRef) is the one the gateway may read.
    secrets: { directory: dirname(layout.mcp.upstreamSecretFile) },
    management: {
      users: [
        {
          username: secrets.gatewayAdmin.username,
          password_hash: await hashSecret(secrets.gatewayAdmin.password),
          roles: ['admin'],
        },
      ],
    },
    policy_configurations: {
      mcpauth_v1: { gatewayurl: layout.gateway.publicUrl },
      jwtauth_v1: {
        keymanagers: [
          {
            name: KEY_MANAGER_NAME,
            issuer: layout.idp.issuer,
            jwks: {
              remote: {
                uri: layout.idp.jwksUrl,
                skipTlsVerify: false,
                certificatePath: layout.caFile,
              },
            },
          },
        ],
      },
    },
  };
  await mkdir(dirname(layout.gateway.configFile), { recursive: true, mode: 0o700 });
  const header = '# Written by `mcp-identity up` on every start; edit the stack, not this file.\n';
  await writeFile(layout.gateway.configFile, header + stringifyToml(config), { mode: 0o600 });
}

/**
 * The `Mcp` proxy definition: mcp-auth for the client application, one mcp-authz rule per tool,
 * lists filtered by them.
 */
export function scimProxyDefinition(
  layout: StackLayout,
  secrets: StackSecrets,
  options: { delegation?: boolean } = {},
): Record<string, unknown> {
  return {
    apiVersion: 'gateway.api-platform.vendor/v1',
    kind: 'Mcp',
    metadata: { name: PROXY_NAME },
    spec: {
      displayName: 'SCIM identity tools',
      version: 'v1.0',
      context: PROXY_CONTEXT,
      // Both eras at one URL (issue 39): 2026-07-28 (modern: server/discover, no session)
      // beside the initialize-based 2025-11-25 and 2025-06-18.
      specVersions: ['2025-06-18', '2025-11-25', '2026-07-28'],
      upstream: {
        url: layout.mcp.mcpUrl,
        auth: upstreamAuth(layout.mcp.upstreamSecretFile),
        ...(options.delegation && { tokenExchange: upstreamTokenExchange(layout) }),
      },
      tools: [],
      resources: [],
      prompts: [],
      policies: [
        {
          name: 'mcp-auth',
          version: 'v1',
          params: {
            issuers: [KEY_MANAGER_NAME],
            audiences: [secrets.clientApp.clientId],
            forwardToken: false,
          },
        },
        // filterLists: a caller's tools/list shows the tools its token may call (issue 42).
        {
          name: 'mcp-authz',
          version: 'v1',
          params: { tools: gatewayRules(), filterLists: true },
        },
      ],
    },
  };
}

/**
 * Deploys the proxy through the management API, as an operator would: created
 * on the first start, replaced on later ones so its rules follow the stack.
 */
export async function deployScimProxy(
  layout: StackLayout,
  secrets: StackSecrets,
  options: { delegation?: boolean } = {},
): Promise<'created' | 'updated'> {
  const base = `${layout.gateway.managementUrl}/api/management/v1/mcp-proxies`;
  const { username, password } = secrets.gatewayAdmin;
  const headers = {
    authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`,
    'content-type': 'application/yaml',
  };
  const body = stringifyYaml(scimProxyDefinition(layout, secrets, options));
  const existing = await fetchNamingUrl(`${base}/${PROXY_NAME}`, { headers });
  await existing.body?.cancel();
  const [method, url, expected] =
    existing.status === 200 ? ['PUT', `${base}/${PROXY_NAME}`, 200] : ['POST', base, 201];
  const response = await fetchNamingUrl(url, { method, headers, body });
  if (response.status !== expected) {
    throw new UnexpectedResponseError(
      `${method} ${url} answered ${response.status}: ${await response.text()}`,
    );
  }
  await response.body?.cancel();
  return method === 'POST' ? 'created' : 'updated';
}
