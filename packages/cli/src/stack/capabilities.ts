import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);

/**
 * Which cross-service features the installed service packages implement.
 * Transitional: the gateway's `upstream.auth`, the SCIM MCP server's
 * `--require-header` and the IdP's `apiResources` bootstrap section land in
 * their packages separately; `up` wires each once its packages have it, and
 * this probe goes away when all of them are in.
 */
export interface StackCapabilities {
  /** Both sides of the gateway → SCIM MCP server credential. */
  upstreamAuth: boolean;
  /** The IdP's RFC 8707 API resources in its bootstrap file. */
  apiResources: boolean;
}

export function probeCapabilities(): StackCapabilities {
  return {
    upstreamAuth:
      packageMentions('@mcp-identity/arazzo-mcp', 'ARAZZO_MCP_REQUIRED_HEADER_VALUE') &&
      packageMentions('@mcp-identity/gateway', 'secretRef'),
    apiResources: packageMentions('@mcp-identity/idp', 'apiResources'),
  };
}

/** Whether a service package's compiled code names a contract's identifier. */
function packageMentions(packageName: string, identifier: string): boolean {
  const dist = dirname(require.resolve(packageName));
  const files = readdirSync(dist, { recursive: true, encoding: 'utf8' });
  return files.some(
    (file) => file.endsWith('.js') && readFileSync(join(dist, file), 'utf8').includes(identifier),
  );
}
