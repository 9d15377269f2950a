import type { RunningStack } from './start.js';

/** Everything a person needs to use the running stack, printed once after start-up. */
export function renderSummary(stack: RunningStack): string {
  const { layout, secrets } = stack;
  const dataFlag = `--data-dir ${JSON.stringify(layout.dataDir)}`;
  const lines = [
    '',
    'mcp-identity is running. Ctrl-C stops everything.',
    '',
    'Area B — the gateway in front of the SCIM MCP server',
    `  MCP endpoint (gateway)      ${layout.gateway.mcpUrl}`,
    `  Protected resource metadata ${layout.gateway.prmUrl}`,
    `  Management API              ${layout.gateway.managementUrl}/api/management/v1/mcp-proxies`,
    `  Health                      ${layout.gateway.healthUrl}`,
    `  Metrics                     ${layout.gateway.managementUrl}/metrics`,
    `  Gateway admin               ${secrets.gatewayAdmin.username} / ${secrets.gatewayAdmin.password}`,
    `  SCIM MCP server (upstream)  ${layout.mcp.mcpUrl}`,
    '',
    'Identity provider (WSO2 Identity Server–compatible)',
    `  Base URL                    ${layout.idp.url}`,
    `  Issuer                      ${layout.idp.issuer}`,
    `  JWKS                        ${layout.idp.jwksUrl}`,
    `  Client application          client_id ${secrets.clientApp.clientId}`,
    `                              client_secret ${secrets.clientApp.clientSecret}`,
    '',
    'Area A — the MCP server with its own OAuth 2.1 authorization server',
    `  MCP endpoint                ${layout.areaA.mcpUrl}`,
    `  Account                     ${secrets.areaAccount.email} / ${secrets.areaAccount.password}`,
    '',
    'Try it (in another terminal):',
    `  npx mcp-identity token --scopes "internal_user_mgt_list internal_user_mgt_view" ${dataFlag}`,
    `  npx mcp-identity call search_users --args '{"filter":"userName sw a","count":5}' ${dataFlag}`,
    `  npx mcp-identity demo ${dataFlag}`,
    '',
    `Self-signed certificates: ${layout.idp.certFile} (IdP) and ${layout.gateway.certFile} (gateway).`,
    `Logs: ${layout.logDir}/`,
    '',
  ];
  return lines.join('\n');
}
