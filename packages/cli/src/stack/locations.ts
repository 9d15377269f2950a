import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);

/** The compiled entry point of a service package's command (`npm run build` makes it). */
export function serviceBin(
  packageName: '@mcp-identity/idp' | '@mcp-identity/gateway' | '@mcp-identity/arazzo-mcp',
): string {
  // The bin sits beside the package's compiled entry point.
  return join(dirname(require.resolve(packageName)), 'bin.js');
}

/** The SCIM tool pack, installed as the `@mcp-identity/scim-tools` package beside this one. */
export const SCIM_ARAZZO_FILE = require.resolve('@mcp-identity/scim-tools/scim.arazzo.yaml');
export const SCIM_GATEWAY_RULES_FILE = require.resolve(
  '@mcp-identity/scim-tools/gateway-rules.yaml',
);

/** Preloaded into each service the stack starts (compiled beside this package's entry point). */
export const PARENT_WATCH_FILE = join(
  dirname(require.resolve('@mcp-identity/cli')),
  'parent-watch.js',
);

/** This command's own entry point, which `up --detach` starts in the background. */
export const CLI_BIN = join(dirname(require.resolve('@mcp-identity/cli')), 'bin.js');
