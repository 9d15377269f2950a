import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomToken } from '@mcp-identity/common';

/** Credentials the stack generates once and reuses on every later start. */
export interface StackSecrets {
  /** Its tokens go to the gateway, which accepts only its client id as audience. */
  clientApp: { clientId: string; clientSecret: string };
  /** Its credentials go to the SCIM MCP server as SCIM_OAUTH2_* and AI_OAUTH2_*. */
  backendApp: { clientId: string; clientSecret: string };
  /** A backend holding read scopes only: the demo shows the IdP refusing its writes. */
  readOnlyApp: { clientId: string; clientSecret: string };
  gatewayAdmin: { username: string; password: string };
  areaAccount: { email: string; password: string };
  /** A person at the IdP who signs in through MCP clients; their role grants list and view only. */
  readOnlyUser: { userName: string; password: string };
}

const FILE = 'stack-secrets.json';

function generate(): StackSecrets {
  return {
    clientApp: { clientId: `mcp-client-${randomToken(9)}`, clientSecret: randomToken(32) },
    backendApp: { clientId: `scim-backend-${randomToken(9)}`, clientSecret: randomToken(32) },
    readOnlyApp: { clientId: `scim-readonly-${randomToken(9)}`, clientSecret: randomToken(32) },
    gatewayAdmin: { username: 'admin', password: randomToken(18) },
    areaAccount: { email: 'agent-admin@example.com', password: randomToken(12) },
    readOnlyUser: { userName: 'reader', password: `${randomToken(12)}Aa1!` },
  };
}

/** The stack's credentials as stored, or undefined when no stack has started in `dataDir`. */
export function readStackSecrets(dataDir: string): Partial<StackSecrets> | undefined {
  const path = join(dataDir, FILE);
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Partial<StackSecrets>;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`Cannot read ${path}: ${(error as Error).message}`);
  }
}

/**
 * Reads the stack's credentials from the data directory, creating them on the
 * first start; entries a newer version added are generated once and saved. The
 * file is readable by its owner only.
 */
export function loadOrCreateStackSecrets(dataDir: string): StackSecrets & { created: boolean } {
  const path = join(dataDir, FILE);
  const stored = readStackSecrets(dataDir);
  const secrets: StackSecrets = { ...generate(), ...stored };
  const complete = stored !== undefined && Object.keys(secrets).every((key) => key in stored);
  if (!complete) {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    writeFileSync(path, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600 });
  }
  return { ...secrets, created: stored === undefined };
}
