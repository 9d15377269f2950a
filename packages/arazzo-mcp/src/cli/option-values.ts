import { ConfigError, normalizeOrigin } from '@mcp-identity/common';

export function parseAllowedOrigins(entries: readonly string[]): string[] {
  const problems = entries
    .filter((entry) => normalizeOrigin(entry) === undefined)
    .map((entry) => ({
      key: 'allowedOrigin',
      source: 'flag --allowed-origin or env var ARAZZO_MCP_ALLOWED_ORIGINS',
      message: `invalid value ${JSON.stringify(entry)}: expected an http(s) origin such as https://app.example.com`,
    }));
  if (problems.length > 0) throw new ConfigError(problems);
  return [...entries];
}

export function parseSourceServers(entries: readonly string[]): Record<string, string> {
  const servers: Record<string, string> = {};
  const problems = entries.flatMap((entry) => {
    const separator = entry.indexOf('=');
    const sourceName = entry.slice(0, separator);
    const url = entry.slice(separator + 1);
    if (separator <= 0 || !isHttpUrl(url)) {
      return [
        {
          key: 'sourceServer',
          source: 'flag --source-server or env var ARAZZO_MCP_SOURCE_SERVERS',
          message: `invalid value ${JSON.stringify(entry)}: expected <name>=<http(s) URL>`,
        },
      ];
    }
    servers[sourceName] = url;
    return [];
  });
  if (problems.length > 0) throw new ConfigError(problems);
  return servers;
}

export function isHttpUrl(text: string): boolean {
  try {
    const { protocol } = new URL(text);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}
