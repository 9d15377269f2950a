import type { JsonObject } from '@mcp-identity/common';
import { etagOf } from './etag.js';
import type { GroupRecord } from './groups.js';
import type { RoleRecord } from './roles.js';
import { AGENT_SCHEMA, CORE_USER, CUSTOM_USER, ENTERPRISE_USER, WSO2_USER } from './user-schema.js';
import type { UserKind } from './users.js';

export const LIST_RESPONSE = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const ROLE_SCHEMA = 'urn:ietf:params:scim:schemas:extension:2.0:Role';
const USER_SCHEMAS = [CORE_USER, ENTERPRISE_USER, WSO2_USER, CUSTOM_USER];

/** Builds absolute resource locations from the IdP's public base URL. */
export class Locations {
  constructor(private readonly base: () => string) {}

  user(kind: UserKind, id: string): string {
    return `${this.base()}/scim2/${kind === 'agent' ? 'Agents' : 'Users'}/${id}`;
  }

  group(id: string): string {
    return `${this.base()}/scim2/Groups/${id}`;
  }

  role(id: string, api: RoleApi = 'v2'): string {
    return `${this.base()}/scim2/${api === 'v1' ? 'Roles' : 'v2/Roles'}/${id}`;
  }

  path(path: string): string {
    return `${this.base()}${path}`;
  }
}

export type UserRelations = {
  groups: readonly Readonly<{ value: string; display: string }>[];
  roles: readonly Readonly<{ value: string; display: string }>[];
};

export function renderUser(
  kind: UserKind,
  record: JsonObject,
  relations: UserRelations,
  locations: Locations,
): JsonObject {
  const { id, meta, userName, ...rest } = record as JsonObject & {
    id: string;
    meta: { created: string; lastModified: string; version: number };
  };
  return {
    schemas: kind === 'agent' ? [...USER_SCHEMAS, AGENT_SCHEMA] : USER_SCHEMAS,
    id,
    userName,
    ...rest,
    ...(relations.groups.length
      ? {
          groups: relations.groups.map((g) => ({ ...g, $ref: locations.group(g.value) })),
        }
      : {}),
    ...(relations.roles.length
      ? { roles: relations.roles.map((r) => ({ ...r, $ref: locations.role(r.value) })) }
      : {}),
    meta: {
      created: meta.created,
      lastModified: meta.lastModified,
      resourceType: kind === 'agent' ? 'Agent' : 'User',
      location: locations.user(kind, id),
      version: etagOf(meta.version),
    },
  };
}

export function renderGroup(group: GroupRecord, locations: Locations): JsonObject {
  return {
    displayName: group.displayName,
    ...(group.externalId === undefined ? {} : { externalId: group.externalId }),
    meta: {
      created: group.created,
      lastModified: group.lastModified,
      location: locations.group(group.id),
      resourceType: 'Group',
      version: etagOf(group.version),
    },
    ...(group.members.length
      ? {
          members: group.members.map((m) => ({
            value: m.value,
            display: m.display,
            $ref: locations.user(m.kind === 'agent' ? 'agent' : 'user', m.value),
            // Members are users (agents are users with the agent extension, RFC 7643 §4.2).
            type: 'User',
          })),
        }
      : {}),
    schemas: [GROUP_SCHEMA],
    id: group.id,
  };
}

/** Roles v1 (`/scim2/Roles`) and v2 (`/scim2/v2/Roles`) serve the same roles. */
export type RoleApi = 'v1' | 'v2';

/** v1 lists permissions as plain strings, v2 as `{value, display}`. */
export function renderRole(
  role: RoleRecord,
  locations: Locations,
  full = true,
  api: RoleApi = 'v2',
): JsonObject {
  return {
    displayName: role.displayName,
    meta: {
      created: role.created,
      lastModified: role.lastModified,
      location: locations.role(role.id, api),
      resourceType: 'Role',
    },
    schemas: [ROLE_SCHEMA],
    id: role.id,
    audience: role.audience,
    ...(full
      ? {
          users: role.users.map((u) => ({ ...u, $ref: locations.user('user', u.value) })),
          groups: role.groups.map((g) => ({ ...g, $ref: locations.group(g.value) })),
          permissions:
            api === 'v1'
              ? role.permissions
              : role.permissions.map((p) => ({ value: p, display: p })),
        }
      : {}),
  };
}

/**
 * WSO2 omits `Resources` when nothing matched; a page past the end (or `count=0`) of a
 * non-empty result carries `"Resources": []`.
 */
export function listResponse(
  total: number,
  startIndex: number,
  resources: JsonObject[],
): JsonObject {
  return {
    totalResults: total,
    startIndex,
    itemsPerPage: resources.length,
    schemas: [LIST_RESPONSE],
    ...(total > 0 ? { Resources: resources } : {}),
  };
}
