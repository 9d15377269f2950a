import { DEFAULT_PORTS, type StackLayout, type StackPorts } from './layout.js';
import type { RunningStack } from './start.js';

/**
 * The command-line flag of the data directory and of each of the stack's ports
 * (`--idp-port`), as `up` and the helper commands define them.
 */
export interface StackFlags {
  dataDir: string;
  ports: Record<keyof StackPorts, string>;
}

/**
 * The flags that point a helper command at this stack: the data directory
 * unless it is the default, and every port that is not the default (the
 * helpers also read the ports from the data directory; the flags make a
 * printed command self-explanatory and copyable elsewhere).
 */
function stackFlags(
  layout: StackLayout,
  options: { defaultDataDir: string; flags: StackFlags },
): string {
  const flags: string[] = [];
  if (layout.dataDir !== options.defaultDataDir) {
    flags.push(`${options.flags.dataDir} ${shellQuote(layout.dataDir)}`);
  }
  for (const [key, flag] of Object.entries(options.flags.ports) as [keyof StackPorts, string][]) {
    if (layout.ports[key] !== DEFAULT_PORTS[key]) flags.push(`${flag} ${layout.ports[key]}`);
  }
  return flags.map((flag) => ` ${flag}`).join('');
}

function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Everything a person needs to use the running stack, printed once after start-up. */
export function renderSummary(
  stack: RunningStack,
  options: { detached: boolean; defaultDataDir: string; flags: StackFlags },
): string {
  const { layout, secrets } = stack;
  const flags = stackFlags(layout, options);
  const lines = [
    '',
    options.detached
      ? `mcp-identity is running in the background. "npx mcp-identity down${flags}" stops it.`
      : 'mcp-identity is running. Ctrl-C stops everything.',
    '',
    'Area B — the gateway in front of the SCIM MCP server',
    `  MCP endpoint (gateway)      ${layout.gateway.mcpUrl}`,
    `                              ${layout.gateway.plainMcpUrl}`,
    `  Protected resource metadata ${layout.gateway.prmUrl}`,
    `  Management API              ${layout.gateway.managementUrl}/api/management/v1/mcp-proxies`,
    `  Health                      ${layout.gateway.healthUrl}`,
    `  Metrics                     ${layout.gateway.managementUrl}/metrics`,
    `  Gateway admin               ${secrets.gatewayAdmin.username} / ${secrets.gatewayAdmin.password}`,
    `  SCIM MCP server (upstream)  ${layout.mcp.mcpUrl}`,
    ...(stack.delegation
      ? [
          '  Delegation                  on: SCIM calls act for the signed-in user (RFC 8693)',
          `  Directory administrator     ${secrets.adminUser.userName} / ${secrets.adminUser.password}`,
        ]
      : []),
    '',
    'Identity provider (WSO2 Identity Server–compatible)',
    `  Base URL                    ${layout.idp.url}`,
    `  Issuer                      ${layout.idp.issuer}`,
    `  JWKS                        ${layout.idp.jwksUrl}`,
    `  Client application          client_id ${secrets.clientApp.clientId}`,
    `                              client_secret ${secrets.clientApp.clientSecret}`,
    `  Read-only user              ${secrets.readOnlyUser.userName} / ${secrets.readOnlyUser.password}`,
    '',
    'Area A — the MCP server with its own OAuth 2.1 authorization server',
    `  MCP endpoint                ${layout.areaA.mcpUrl}`,
    `  Account                     ${secrets.areaAccount.email} / ${secrets.areaAccount.password}`,
    '',
    'Try it (in another terminal):',
    `  npx mcp-identity token --scopes "internal_user_mgt_list internal_user_mgt_view"${flags}`,
    `  npx mcp-identity call search_users --args '{"filter":"userName sw a","count":5}'${flags}`,
    `  npx mcp-identity demo${flags}`,
    `  npx mcp-identity status${flags}`,
    `  npx mcp-identity connect <claude|vscode|cursor|inspector>${flags}`,
    '',
    `Local CA (trust it to reach the HTTPS listeners): ${layout.caFile}`,
    `  NODE_EXTRA_CA_CERTS=${layout.caFile}    curl --cacert ${layout.caFile}`,
    `Logs: ${layout.logDir}/`,
    '',
  ];
  return lines.join('\n');
}
