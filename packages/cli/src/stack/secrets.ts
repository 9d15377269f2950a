import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { compileSchema, McpIdentityError, randomToken } from '@mcp-identity/common';
import { type Static, Type } from '@sinclair/typebox';

const clientCredentials = Type.Object({ clientId: Type.String(), clientSecret: Type.String() });

/** Credentials the stack generates once and reuses on every later start. */
const STACK_SECRETS_SCHEMA = Type.Object({
  /** Its tokens go to the gateway, which accepts only its client id as audience. */
  clientApp: clientCredentials,
  /** Its credentials go to the SCIM MCP server as SCIM_OAUTH2_* and AI_OAUTH2_*. */
  backendApp: clientCredentials,
  /** A backend holding read scopes only: the demo shows the IdP refusing its writes. */
  readOnlyApp: clientCredentials,
  gatewayAdmin: Type.Object({ username: Type.String(), password: Type.String() }),
  areaAccount: Type.Object({ email: Type.String(), password: Type.String() }),
  /** A person at the IdP who signs in through MCP clients; their role grants list and view only. */
  readOnlyUser: Type.Object({ userName: Type.String(), password: Type.String() }),
  /**
   * `up --delegation` only: a person at the IdP whose role grants every SCIM permission, so the
   * directory lets their delegated writes through (the read-only user's it refuses).
   */
  adminUser: Type.Object({ userName: Type.String(), password: Type.String() }),
});

export type StackSecrets = Static<typeof STACK_SECRETS_SCHEMA>;

const COMPLETE_SECRETS = compileSchema(STACK_SECRETS_SCHEMA);
/** What a file written by an older version holds: some entries, each complete. */
const STORED_SECRETS = compileSchema(Type.Partial(STACK_SECRETS_SCHEMA));

/** Whether the stored credentials have every entry this version uses. */
export function isStackSecrets(value: unknown): value is StackSecrets {
  return COMPLETE_SECRETS.is(value);
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
    adminUser: { userName: 'directory-admin', password: `${randomToken(12)}Aa1!` },
  };
}

/** A stack credentials file that exists but cannot be read or does not hold what `up` writes. */
export class StackSecretsError extends McpIdentityError {
  readonly code = 'ERR_STACK_SECRETS';
}

/** The stack's credentials as stored, or undefined when no stack has started in `dataDir`. */
export function readStackSecrets(dataDir: string): Partial<StackSecrets> | undefined {
  const path = join(dataDir, FILE);
  try {
    return STORED_SECRETS.parse(JSON.parse(readFileSync(path, 'utf8')), 'its content');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new StackSecretsError(`Cannot read ${path}: ${(error as Error).message}`);
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
