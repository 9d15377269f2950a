import { McpIdentityError } from '@mcp-identity/common';
import { KNOWN_SCOPES } from '../scim/scopes.js';
import type { Application } from './apps.js';
import { type Db, statement } from './db.js';

/**
 * An API resource (RFC 8707 resource indicator): a protected resource, such as the gateway's
 * MCP endpoint, that tokens can be bound to. Modelled on WSO2 IS 7's "API resources".
 */
export type ApiResource = {
  /** Absolute http(s) URL without a fragment; becomes the token's `aud`. */
  identifier: string;
  name: string;
  /** Scopes this resource offers; a token for it carries no other. */
  scopes: string[];
  /** Dynamically registered clients may get it, in flows with a signed-in user. */
  dynamicClients: boolean;
  /** Names of the (registered, non-dynamic) applications that may get it. */
  applications: string[];
};

export class ApiResourceError extends McpIdentityError {
  readonly code = 'ERR_API_RESOURCE';
}

/** Checks an API resource definition; the message names the field at fault. */
export function validateApiResource(input: ApiResource): ApiResource {
  let url: URL;
  try {
    url = new URL(input.identifier);
  } catch {
    throw new ApiResourceError(`identifier must be an absolute URL: ${input.identifier}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ApiResourceError(`identifier must be an http or https URL: ${input.identifier}`);
  }
  if (input.identifier.includes('#')) {
    throw new ApiResourceError(`identifier must not contain a fragment: ${input.identifier}`);
  }
  if (!input.name.trim()) throw new ApiResourceError('name must not be empty');
  const known = new Set(KNOWN_SCOPES);
  const unknown = input.scopes.filter((s) => !known.has(s));
  if (unknown.length) throw new ApiResourceError(`unknown scope(s): ${unknown.join(', ')}`);
  return {
    ...input,
    scopes: [...new Set(input.scopes)],
    applications: [...new Set(input.applications)],
  };
}

type ResourceRow = {
  identifier: string;
  name: string;
  scopes: string;
  dynamic_clients: number;
  applications: string;
};

const toResource = (row: ResourceRow): ApiResource => ({
  identifier: row.identifier,
  name: row.name,
  scopes: JSON.parse(row.scopes) as string[],
  dynamicClients: row.dynamic_clients === 1,
  applications: JSON.parse(row.applications) as string[],
});

/** The API resources the IdP issues tokens for, kept in its database. */
export class ApiResourceStore {
  constructor(private readonly db: Db) {}

  list(): ApiResource[] {
    const rows = statement(
      this.db,
      'SELECT * FROM api_resources ORDER BY identifier',
    ).all() as ResourceRow[];
    return rows.map(toResource);
  }

  get(identifier: string): ApiResource | undefined {
    const row = statement(this.db, 'SELECT * FROM api_resources WHERE identifier = ?').get(
      identifier,
    ) as ResourceRow | undefined;
    return row ? toResource(row) : undefined;
  }

  /** Creates the resource, or replaces the definition of an existing one. */
  put(input: ApiResource): ApiResource {
    const resource = validateApiResource(input);
    statement(
      this.db,
      `INSERT INTO api_resources (identifier, name, scopes, dynamic_clients, applications)
         VALUES (?, ?, ?, ?, ?)
         ON CONFLICT(identifier) DO UPDATE SET name = excluded.name, scopes = excluded.scopes,
           dynamic_clients = excluded.dynamic_clients, applications = excluded.applications`,
    ).run(
      resource.identifier,
      resource.name,
      JSON.stringify(resource.scopes),
      resource.dynamicClients ? 1 : 0,
      JSON.stringify(resource.applications),
    );
    return resource;
  }

  delete(identifier: string): boolean {
    return (
      statement(this.db, 'DELETE FROM api_resources WHERE identifier = ?').run(identifier).changes >
      0
    );
  }
}

/**
 * Whether `client` may get a token for `resource` (RFC 8707): a dynamically registered client
 * when the resource accepts dynamic clients and a user signed in; any other application only
 * when the resource lists it by name.
 */
export function mayReceive(
  resource: ApiResource,
  client: Application,
  flow: 'user' | 'client_credentials',
): boolean {
  if (client.dynamic) return resource.dynamicClients && flow === 'user';
  return resource.applications.includes(client.name);
}
