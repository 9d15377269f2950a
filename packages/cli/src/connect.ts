import type { StackLayout } from './stack/layout.js';

export const MCP_CLIENTS = ['claude', 'vscode', 'cursor', 'inspector'] as const;
export type McpClientName = (typeof MCP_CLIENTS)[number];

const GATEWAY = 'scim-gateway';
const AREA_A = 'scim-area-a';

const json = (value: unknown) => JSON.stringify(value, null, 2);

/** Both endpoints, each as one client format spells a server entry. */
function bothServers(layout: StackLayout, entry: (url: string) => Record<string, string>) {
  return { [GATEWAY]: entry(layout.gateway.mcpUrl), [AREA_A]: entry(layout.areaA.mcpUrl) };
}

/** The MCP Inspector release tested against the stack (packages/cli/test/inspector.test.ts). */
export const INSPECTOR_VERSION = '2.12.0';

/** MCP Inspector's `--config` file for the running stack: both endpoints, by URL only. */
export function inspectorConfiguration(layout: StackLayout) {
  return { mcpServers: bothServers(layout, (url) => ({ type: 'streamable-http', url })) };
}

/**
 * A ready-to-paste configuration of one MCP client for the running stack: the
 * gateway (HTTPS, certificate from the stack's CA) and Area A. Both speak the
 * MCP authorization specification, so the client needs only the URL: it
 * discovers the authorization server, registers itself and opens the login.
 */
export function clientConfiguration(client: McpClientName, layout: StackLayout): string {
  const httpServers = bothServers(layout, (url) => ({ type: 'http', url }));
  const caHint = [
    `The gateway's certificate is issued by the stack's local CA: ${layout.caFile}`,
    `Start the client with NODE_EXTRA_CA_CERTS=${layout.caFile} (Node-based clients), or add`,
    'the CA to the system trust store; the plain listener needs no CA:',
    `  ${layout.gateway.plainMcpUrl}`,
  ].join('\n');
  /** The CA hint as comment lines of the client's format. */
  const commented = (marker: string) => `${marker} ${caHint.split('\n').join(`\n${marker} `)}`;
  switch (client) {
    case 'claude':
      return [
        '# Claude Code: add both servers (project scope writes .mcp.json)',
        `claude mcp add --transport http ${GATEWAY} ${layout.gateway.mcpUrl}`,
        `claude mcp add --transport http ${AREA_A} ${layout.areaA.mcpUrl}`,
        '',
        '# or paste into .mcp.json:',
        json({ mcpServers: httpServers }),
        '',
        commented('#'),
        `#   e.g. NODE_EXTRA_CA_CERTS=${layout.caFile} claude`,
        '',
      ].join('\n');
    case 'vscode':
      return ['// .vscode/mcp.json', json({ servers: httpServers }), '', commented('//'), ''].join(
        '\n',
      );
    case 'cursor':
      return [
        '// ~/.cursor/mcp.json (or .cursor/mcp.json in a project)',
        json({ mcpServers: bothServers(layout, (url) => ({ url })) }),
        '',
        commented('//'),
        '',
      ].join('\n');
    case 'inspector':
      return [
        `# MCP Inspector ${INSPECTOR_VERSION} (needs Node >= 22.19): save as inspector.json, then`,
        `#   NODE_EXTRA_CA_CERTS=${layout.caFile} npx @modelcontextprotocol/inspector@${INSPECTOR_VERSION} --config inspector.json`,
        '# On an older Node, from a checkout of mcp-identity (Linux x64: it brings its own Node):',
        '#   npm ci --prefix tools/inspector --ignore-scripts',
        `#   NODE_EXTRA_CA_CERTS=${layout.caFile} npm start --prefix tools/inspector -- --config "$PWD/inspector.json"`,
        '# Open the printed URL and switch a server on: Inspector registers, opens the login, connects.',
        json(inspectorConfiguration(layout)),
        '',
        commented('#'),
        '',
      ].join('\n');
  }
}
