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

/**
 * Which MCP era a URL-only configuration uses: both endpoints are dual-era servers (MCP
 * 2026-07-28, basic/versioning), so the client's own version negotiation decides.
 */
const CLIENT_ERA = [
  "Protocol era: the client's choice. Both URLs serve MCP 2026-07-28 (modern: server/discover,",
  'no session) beside 2025-11-25 (legacy: initialize): a client that speaks 2026-07-28 uses it,',
  'any other keeps the initialize handshake.',
];

/** Inspector 2.12 has a per-server setting, legacy unless the entry says otherwise. */
const INSPECTOR_ERA = [
  'Protocol era: legacy (2025-11-25, initialize), Inspector\'s default. Add "protocolEra":',
  '"modern" (pins 2026-07-28) or "auto" (probes server/discover) to a server entry to change it.',
];

/** The MCP Inspector release tested against the stack (packages/cli/test/inspector.test.ts). */
export const INSPECTOR_VERSION = '2.12.0';

/** MCP Inspector's `--config` file for the running stack: both endpoints, by URL only. */
export function inspectorConfiguration(layout: StackLayout) {
  return { mcpServers: bothServers(layout, (url) => ({ type: 'streamable-http', url })) };
}

/** What `mcp-identity connect <client>` prints: the file to save (stdout), the advice (stderr). */
export interface ClientConnection {
  /** The client's configuration file, valid JSON, to be saved as it is. */
  config: string;
  /** Where to save it and how to start the client: `#` comment lines, for the terminal. */
  advice: string;
}

/**
 * A ready-to-save configuration of one MCP client for the running stack: the gateway (HTTPS,
 * certificate from the stack's CA) and Area A. Both speak the MCP authorization
 * specification, so the client needs only the URL: it discovers the authorization server,
 * registers itself (or presents its metadata document) and opens the login.
 */
export function clientConfiguration(client: McpClientName, layout: StackLayout): ClientConnection {
  const httpServers = bothServers(layout, (url) => ({ type: 'http', url }));
  // The gateway sends clients to the IdP to sign in: an OAuth client needs the CA for the IdP
  // whichever gateway listener it uses; only Area A, its own authorization server over plain
  // HTTP, needs none.
  const caHint = [
    `The gateway and the identity provider it signs clients in at (${layout.idp.url}) have`,
    `certificates of the stack's local CA: ${layout.caFile}`,
    `Start the client with NODE_EXTRA_CA_CERTS=${layout.caFile} (Node-based clients), or add`,
    "the CA to the system trust store. The gateway's plain HTTP listener",
    `(${layout.gateway.plainMcpUrl}) needs no CA itself, but its sign-in still goes to the`,
    `identity provider over HTTPS, so the client needs the CA all the same. Area A`,
    `(${layout.areaA.mcpUrl}) signs clients in itself over plain HTTP and needs no CA.`,
  ];
  /** The protocol era, the lines, then the CA hint, as `#` comment lines. */
  const advise = (lines: readonly string[], era = CLIENT_ERA) =>
    `${[...era, '', ...lines, '', ...caHint].map((line) => `# ${line}`.trimEnd()).join('\n')}\n`;
  switch (client) {
    case 'claude':
      return {
        config: `${json({ mcpServers: httpServers })}\n`,
        advice: advise([
          'Claude Code: save as .mcp.json (project scope), or add both servers with',
          `  claude mcp add --transport http ${GATEWAY} ${layout.gateway.mcpUrl}`,
          `  claude mcp add --transport http ${AREA_A} ${layout.areaA.mcpUrl}`,
          `then start it, e.g. NODE_EXTRA_CA_CERTS=${layout.caFile} claude`,
        ]),
      };
    case 'vscode':
      return {
        config: `${json({ servers: httpServers })}\n`,
        advice: advise(['VS Code: save as .vscode/mcp.json']),
      };
    case 'cursor':
      return {
        config: `${json({ mcpServers: bothServers(layout, (url) => ({ url })) })}\n`,
        advice: advise(['Cursor: save as ~/.cursor/mcp.json (or .cursor/mcp.json in a project)']),
      };
    case 'inspector':
      return {
        config: `${json(inspectorConfiguration(layout))}\n`,
        advice: advise(
          [
            `MCP Inspector ${INSPECTOR_VERSION} (needs Node >= 22.19): save as inspector.json, then`,
            `  NODE_EXTRA_CA_CERTS=${layout.caFile} npx @modelcontextprotocol/inspector@${INSPECTOR_VERSION} --config inspector.json`,
            'On an older Node, from a checkout of mcp-identity (Linux x64: it brings its own Node):',
            '  npm ci --prefix tools/inspector --ignore-scripts',
            `  NODE_EXTRA_CA_CERTS=${layout.caFile} npm start --prefix tools/inspector -- --config "$PWD/inspector.json"`,
            'Open the printed URL and switch a server on: Inspector registers, opens the login, connects.',
          ],
          INSPECTOR_ERA,
        ),
      };
  }
}
