import type { StackLayout } from './stack/layout.js';

export const MCP_CLIENTS = ['claude', 'vscode', 'cursor', 'inspector'] as const;
export type McpClientName = (typeof MCP_CLIENTS)[number];

const GATEWAY = 'scim-gateway';
const AREA_A = 'scim-area-a';

const json = (value: unknown) => JSON.stringify(value, null, 2);

/**
 * A ready-to-paste configuration of one MCP client for the running stack: the
 * gateway (HTTPS, certificate from the stack's CA) and Area A. Both speak the
 * MCP authorization specification, so the client needs only the URL: it
 * discovers the authorization server, registers itself and opens the login.
 */
export function clientConfiguration(client: McpClientName, layout: StackLayout): string {
  const gateway = layout.gateway.mcpUrl;
  const areaA = layout.areaA.mcpUrl;
  const caHint = [
    `The gateway's certificate is issued by the stack's local CA: ${layout.caFile}`,
    `Start the client with NODE_EXTRA_CA_CERTS=${layout.caFile} (Node-based clients), or add`,
    'the CA to the system trust store; the plain listener needs no CA:',
    `  ${layout.gateway.plainMcpUrl}`,
  ].join('\n');
  switch (client) {
    case 'claude':
      return [
        '# Claude Code: add both servers (project scope writes .mcp.json)',
        `claude mcp add --transport http ${GATEWAY} ${gateway}`,
        `claude mcp add --transport http ${AREA_A} ${areaA}`,
        '',
        '# or paste into .mcp.json:',
        json({
          mcpServers: {
            [GATEWAY]: { type: 'http', url: gateway },
            [AREA_A]: { type: 'http', url: areaA },
          },
        }),
        '',
        `# ${caHint.split('\n').join('\n# ')}`,
        `#   e.g. NODE_EXTRA_CA_CERTS=${layout.caFile} claude`,
        '',
      ].join('\n');
    case 'vscode':
      return [
        '// .vscode/mcp.json',
        json({
          servers: {
            [GATEWAY]: { type: 'http', url: gateway },
            [AREA_A]: { type: 'http', url: areaA },
          },
        }),
        '',
        `// ${caHint.split('\n').join('\n// ')}`,
        '',
      ].join('\n');
    case 'cursor':
      return [
        '// ~/.cursor/mcp.json (or .cursor/mcp.json in a project)',
        json({ mcpServers: { [GATEWAY]: { url: gateway }, [AREA_A]: { url: areaA } } }),
        '',
        `// ${caHint.split('\n').join('\n// ')}`,
        '',
      ].join('\n');
    case 'inspector':
      return [
        '# MCP Inspector: save as inspector.json, then',
        `#   NODE_EXTRA_CA_CERTS=${layout.caFile} npx @modelcontextprotocol/inspector --config inspector.json --server ${GATEWAY}`,
        '# (web UI: Transport "Streamable HTTP", the URL below, Connect; OAuth starts by itself)',
        json({
          mcpServers: {
            [GATEWAY]: { type: 'streamable-http', url: gateway },
            [AREA_A]: { type: 'streamable-http', url: areaA },
          },
        }),
        '',
        `# ${caHint.split('\n').join('\n# ')}`,
        '',
      ].join('\n');
  }
}
