import type { ProxyRegistry, ProxyRuntime } from './registry.js';

const PRM_SUFFIX = '/.well-known/oauth-protected-resource';
const MCP_SUFFIX = '/mcp';

/**
 * The request path as the router sees it: no query, no trailing slashes. Nothing is decoded:
 * a context is matched byte for byte, so a percent-encoded or dot-segment spelling of a context
 * reaches no proxy at all rather than a different policy.
 */
export function pathOf(url: string): string {
  const query = url.indexOf('?');
  let end = query < 0 ? url.length : query;
  while (end > 1 && url.charCodeAt(end - 1) === 47) end--;
  return url.slice(0, end);
}

/** The proxy whose `<context>/mcp` this path is, if any. */
export function mcpRuntimeAt(registry: ProxyRegistry, path: string): ProxyRuntime | undefined {
  return path.endsWith(MCP_SUFFIX)
    ? registry.byContextPath(path.slice(0, -MCP_SUFFIX.length))
    : undefined;
}

/**
 * The proxy whose protected resource metadata this path asks for (both RFC 9728 locations):
 * false when the path is no metadata location at all.
 */
export function metadataRuntimeAt(
  registry: ProxyRegistry,
  path: string,
): ProxyRuntime | undefined | false {
  if (path.startsWith(`${PRM_SUFFIX}/`) && path.endsWith(MCP_SUFFIX)) {
    return registry.byContextPath(path.slice(PRM_SUFFIX.length, -MCP_SUFFIX.length));
  }
  if (path.endsWith(PRM_SUFFIX)) return registry.byContextPath(path.slice(0, -PRM_SUFFIX.length));
  return false;
}
