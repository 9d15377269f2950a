import { describe, expect, it } from 'vitest';
import { clientConfiguration, MCP_CLIENTS } from '../src/connect.js';
import { DEFAULT_PORTS, stackLayout } from '../src/stack/layout.js';

// What `mcp-identity connect` prints about the protocol era; the configurations themselves
// are checked against a running stack in up-command.test.ts, and Inspector's in inspector.test.ts.
const layout = stackLayout('/data', DEFAULT_PORTS);

/** The advice's comment lines saying which era the configuration uses, as one sentence. */
function eraOf({ advice }: { advice: string }): string {
  const lines = advice.split('\n');
  const start = lines.findIndex((line) => line.startsWith('# Protocol era:'));
  const end = lines.indexOf('#', start);
  return lines
    .slice(start, end)
    .map((line) => line.replace(/^# /, ''))
    .join(' ');
}

describe('`connect` says which protocol era each client configuration uses', () => {
  it.each(MCP_CLIENTS.filter((client) => client !== 'inspector'))(
    '%s: the client’s own negotiation, both eras being served at both URLs',
    (client) => {
      expect(eraOf(clientConfiguration(client, layout))).toBe(
        "Protocol era: the client's choice. Both URLs serve MCP 2026-07-28 (modern: server/discover, no session) beside 2025-11-25 (legacy: initialize): a client that speaks 2026-07-28 uses it, any other keeps the initialize handshake.",
      );
    },
  );

  it('inspector: legacy, Inspector’s default, and the per-server setting that changes it', () => {
    expect(eraOf(clientConfiguration('inspector', layout))).toBe(
      'Protocol era: legacy (2025-11-25, initialize), Inspector\'s default. Add "protocolEra": "modern" (pins 2026-07-28) or "auto" (probes server/discover) to a server entry to change it.',
    );
  });
});

describe('`connect` output that can be saved as it is', () => {
  it.each(MCP_CLIENTS)('%s: the configuration is valid JSON, the advice apart', (client) => {
    const { config, advice } = clientConfiguration(client, layout);
    const parsed = JSON.parse(config) as Record<string, Record<string, { url: string }>>;
    const servers = Object.values(parsed)[0] ?? {};
    expect(Object.values(servers).map((server) => server.url)).toEqual([
      'https://localhost:8443/scim/mcp',
      'http://localhost:7000/mcp',
    ]);
    for (const line of advice.trimEnd().split('\n')) expect(line).toMatch(/^#( |$)/);
  });

  it('says an OAuth client needs the CA for the IdP even through the plain listener', () => {
    const { advice } = clientConfiguration('inspector', layout);
    const text = advice.replace(/\n# ?/g, ' ');
    expect(text).toContain('NODE_EXTRA_CA_CERTS=/data/ca/ca.pem');
    expect(text).toContain(
      "The gateway's plain HTTP listener (http://localhost:8080/scim/mcp) needs no CA itself, but its sign-in still goes to the identity provider over HTTPS, so the client needs the CA all the same.",
    );
    expect(text).toContain('(https://localhost:9443)');
    expect(text).not.toContain('the plain listener needs no CA:');
  });
});
