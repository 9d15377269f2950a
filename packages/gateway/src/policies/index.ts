import { mcpAuth } from './mcp-auth.js';
import { mcpAuthz } from './mcp-authz.js';
import { mcpRateLimit } from './mcp-ratelimit.js';
import type { PolicyFactory } from './policy.js';

/** Every policy a proxy definition may attach, by name. A new policy registers here. */
export const POLICIES: ReadonlyMap<string, PolicyFactory> = new Map(
  [mcpAuth, mcpAuthz, mcpRateLimit].map((factory) => [factory.name, factory]),
);
