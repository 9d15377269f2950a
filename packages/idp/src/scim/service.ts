import type { JsonObject } from '@mcp-identity/common';
import { badRequest, forbidden, invalidSyntax, ScimError } from './errors.js';
import {
  ALL_LOGIC,
  ALL_OPERATORS,
  type FilterLogic,
  type FilterOperator,
  type FilterPolicy,
  type FilterTree,
  parseFilter,
  UNKNOWN_FILTER_ATTRIBUTE,
} from './filter.js';
import { type GroupStore, groupFilterKey, groupValuePath } from './groups.js';
import { readPatchOperations } from './patch.js';
import {
  assertMayGrant,
  groupWriteAddsMembers,
  permissionsGrantedByRolePatch,
  permissionsOfGroup,
  permissionsOfRoleBody,
} from './privileges.js';
import {
  type Locations,
  listResponse,
  type RoleApi,
  renderGroup,
  renderRole,
  renderUser,
  type UserRelations,
} from './render.js';
import { RoleStore, roleFilterKey } from './roles.js';
import { ROLE_OPERATION_SCOPES } from './scopes.js';
import type { Page, UserKind, UserStore } from './users.js';

export type ScimResponse = { status: number; body?: JsonObject; location?: string };

/** What the valve decided for the request: operation scopes are checked when not `granted`. */
export type Access = {
  granted: boolean;
  scopes: ReadonlySet<string>;
  /** What the caller holds and so may hand out: a user's role permissions, an application's scopes. */
  held: ReadonlySet<string>;
};

export type ListQuery = {
  filter?: unknown;
  startIndex?: unknown;
  count?: unknown;
  sortBy?: unknown;
  sortOrder?: unknown;
  attributes?: unknown;
  excludedAttributes?: unknown;
};

const DEFAULT_COUNT = 100;
const MAX_COUNT = 200;

const ops = (...names: FilterOperator[]) => new Set<FilterOperator>(names);
const logic = (...names: FilterLogic[]) => new Set<FilterLogic>(names);
const invalidFilter = (detail: string, status = 400) =>
  new ScimError(status, detail, 'InvalidFilter');

/** The SCIM operations, shared by the HTTP routes and the Bulk endpoint. */
export class ScimService {
  constructor(
    readonly users: UserStore,
    readonly groups: GroupStore,
    readonly roles: RoleStore,
    private readonly locations: Locations,
  ) {}

  // Users and agents

  async createUser(kind: UserKind, body: unknown): Promise<ScimResponse> {
    const { row, password } = await this.users.create(kind, body);
    const rendered = this.renderUser(kind, row);
    return {
      status: 201,
      body: password === undefined ? rendered : { ...rendered, password },
      location: this.locations.user(kind, row.id as string),
    };
  }

  getUser(kind: UserKind, id: string): ScimResponse {
    return this.userResponse(kind, this.users.get(kind, id));
  }

  async replaceUser(kind: UserKind, id: string, body: unknown): Promise<ScimResponse> {
    return this.userResponse(kind, await this.users.replace(kind, id, body));
  }

  async patchUser(kind: UserKind, id: string, body: unknown): Promise<ScimResponse> {
    return this.userResponse(kind, await this.users.patch(kind, id, readPatchOperations(body)));
  }

  deleteUser(kind: UserKind, id: string): ScimResponse {
    this.users.delete(kind, id);
    return { status: 204 };
  }

  async listUsers(kind: UserKind, query: ListQuery): Promise<ScimResponse> {
    if (query.sortBy !== undefined || query.sortOrder !== undefined) {
      throw new ScimError(501, 'Sorting is not supported');
    }
    const schema = this.users.schema();
    const tree = this.filterTree(query.filter, {
      operators: ALL_OPERATORS,
      logic: ALL_LOGIC,
      resolve: (a) => schema.filterKey(a),
      valuePath: (a) => schema.valuePath(a),
      unsupportedOperator: (op) =>
        invalidFilter(`Filter operation: ${op} is not supported for filtering in users endpoint.`),
      unsupportedLogic: (op) => invalidFilter(`Unsupported Operation: ${op}`),
      unknownAttribute: UNKNOWN_FILTER_ATTRIBUTE,
    });
    const page = readPage(query);
    const { total, rows } = await this.users.search(kind, tree, page);
    return {
      status: 200,
      body: listResponse(total, page.startIndex, this.renderUsers(kind, rows)),
    };
  }

  /**
   * Root search (`POST /scim2/.search`, RFC 7644 §3.4.3): users, then groups, as one list paged
   * across both. A filter naming an attribute one resource type lacks matches none of it.
   */
  async searchAll(query: ListQuery): Promise<ScimResponse> {
    const page = readPage(query);
    const users = await noneIfUnknownAttribute(() =>
      this.listUsers('user', { ...query, startIndex: page.startIndex, count: page.count }),
    );
    const usersTotal = users ? Number(users.body!.totalResults) : 0;
    const found = (users?.body?.Resources as JsonObject[] | undefined) ?? [];
    const groups = await noneIfUnknownAttribute(() =>
      this.listGroups({
        ...query,
        startIndex: Math.max(1, page.startIndex - usersTotal),
        count: page.count - found.length,
      }),
    );
    if (!users && !groups) throw UNKNOWN_FILTER_ATTRIBUTE();
    const total = usersTotal + (groups ? Number(groups.body!.totalResults) : 0);
    const resources = [...found, ...((groups?.body?.Resources as JsonObject[] | undefined) ?? [])];
    return { status: 200, body: listResponse(total, page.startIndex, resources) };
  }

  // Groups

  createGroup(body: unknown): ScimResponse {
    const group = this.groups.create(body);
    return {
      status: 201,
      body: renderGroup(group, this.locations),
      location: this.locations.group(group.id),
    };
  }

  getGroup(id: string): ScimResponse {
    return this.groupResponse(this.groups.get(id));
  }

  replaceGroup(id: string, body: unknown, access: Access): ScimResponse {
    if (groupWriteAddsMembers(body))
      assertMayGrant(access, permissionsOfGroup(this.roles, id), 'update');
    return this.groupResponse(this.groups.replace(id, body));
  }

  patchGroup(id: string, body: unknown, access: Access): ScimResponse {
    const operations = readPatchOperations(body);
    if (groupWriteAddsMembers(operations)) {
      assertMayGrant(access, permissionsOfGroup(this.roles, id), 'update');
    }
    return this.groupResponse(this.groups.patch(id, operations));
  }

  deleteGroup(id: string): ScimResponse {
    this.groups.delete(id);
    return { status: 204 };
  }

  listGroups(query: ListQuery): ScimResponse {
    const tree = this.filterTree(query.filter, {
      operators: ALL_OPERATORS,
      logic: ALL_LOGIC,
      resolve: groupFilterKey,
      valuePath: groupValuePath,
      unsupportedOperator: (op) =>
        invalidFilter(`Filter operation: ${op} is not supported for groups filtering.`),
      unsupportedLogic: (op) => invalidFilter(`Unsupported Operation: ${op}`),
      unknownAttribute: UNKNOWN_FILTER_ATTRIBUTE,
    });
    const page = readPage(query);
    return this.page(page, this.groups.list(tree), (g) => renderGroup(g, this.locations));
  }

  // Roles (v2, and v1 with its own locations and permission shape)

  createRole(body: unknown, access: Access, api: RoleApi = 'v2'): ScimResponse {
    checkRoleOperationScopes(RoleStore.sectionsOfBody(body), access);
    assertMayGrant(access, permissionsOfRoleBody(body), 'create');
    const role = this.roles.create(body);
    return {
      status: 201,
      body: renderRole(role, this.locations, true, api),
      location: this.locations.role(role.id, api),
    };
  }

  getRole(id: string, api: RoleApi = 'v2'): ScimResponse {
    return this.roleResponse(this.roles.get(id), api);
  }

  replaceRole(id: string, body: unknown, access: Access, api: RoleApi = 'v2'): ScimResponse {
    checkRoleOperationScopes(RoleStore.sectionsOfBody(body), access);
    assertMayGrant(access, permissionsOfRoleBody(body), 'update');
    return this.roleResponse(this.roles.replace(id, body), api);
  }

  patchRole(id: string, body: unknown, access: Access, api: RoleApi = 'v2'): ScimResponse {
    const operations = readPatchOperations(body);
    checkRoleOperationScopes(RoleStore.sectionsOfPatch(operations), access);
    const granted = permissionsGrantedByRolePatch(this.roles.find(id), operations);
    assertMayGrant(access, granted, 'update');
    return this.roleResponse(this.roles.patch(id, operations), api);
  }

  deleteRole(id: string): ScimResponse {
    this.roles.delete(id);
    return { status: 204 };
  }

  listRoles(query: ListQuery, api: RoleApi = 'v2'): ScimResponse {
    const tree = this.filterTree(query.filter, {
      operators: ops('eq', 'ne', 'co', 'sw', 'ew'),
      logic: logic('and'),
      resolve: roleFilterKey,
      unsupportedOperator: (op) =>
        invalidFilter(`Filter operation: ${op} is not supported for role filtering.`),
      unsupportedLogic: (op) =>
        invalidFilter(`Filter operator: ${op} is not supported for role filtering.`),
      unknownAttribute: (a) =>
        invalidFilter(`Filtering based on attribute: ${a} is not supported.`),
    });
    const page = readPage(query);
    return this.page(page, this.roles.list(tree), (r) => renderRole(r, this.locations, false, api));
  }

  /** Validates a `.search` body (charon's rules) and returns it as list query parameters. */
  static readSearchRequest(body: unknown): ListQuery {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw invalidSyntax('The request body must be a JSON object.');
    }
    const request = body as JsonObject;
    if (!Array.isArray(request.schemas)) {
      throw badRequest(
        "Attribute 'schemas' is missing or is not a valid JSON array.",
        'invalidSyntax',
      );
    }
    // WSO2 (charon's SearchRequest decoding) answers a wrong schemas count with invalidValue.
    if (request.schemas.length !== 1) throw badRequest('Schema is invalid');
    return {
      filter: request.filter,
      startIndex: request.startIndex,
      count: request.count,
      sortBy: request.sortBy,
      sortOrder: request.sortOrder,
      attributes: request.attributes,
      excludedAttributes: request.excludedAttributes,
    };
  }

  private filterTree(filter: unknown, policy: FilterPolicy): FilterTree | undefined {
    if (filter === undefined) return undefined;
    if (typeof filter !== 'string') throw invalidFilter('Given filter operator is not supported.');
    return parseFilter(filter, policy);
  }

  /** Renders only the requested page of an in-memory list. */
  private page<T>(page: Page, all: readonly T[], render: (item: T) => JsonObject): ScimResponse {
    const slice = all.slice(page.startIndex - 1, page.startIndex - 1 + page.count);
    return { status: 200, body: listResponse(all.length, page.startIndex, slice.map(render)) };
  }

  private renderUser(kind: UserKind, record: JsonObject): JsonObject {
    return this.renderUsers(kind, [record])[0]!;
  }

  /** Renders users with their groups and roles, read for all of them at once. */
  private renderUsers(kind: UserKind, records: readonly JsonObject[]): JsonObject[] {
    const ids = records.map((r) => r.id as string);
    const groups = this.groups.groupsOfUsers(ids);
    const roles = this.roles.rolesOfUsers(ids);
    return records.map((record) => {
      const id = record.id as string;
      const relations: UserRelations = { groups: groups.get(id) ?? [], roles: roles.get(id) ?? [] };
      return renderUser(kind, record, relations, this.locations);
    });
  }

  private userResponse(kind: UserKind, record: JsonObject): ScimResponse {
    const body = this.renderUser(kind, record);
    return { status: 200, body, location: this.locations.user(kind, record.id as string) };
  }

  private groupResponse(group: ReturnType<GroupStore['get']>): ScimResponse {
    return {
      status: 200,
      body: renderGroup(group, this.locations),
      location: this.locations.group(group.id),
    };
  }

  private roleResponse(role: ReturnType<RoleStore['get']>, api: RoleApi): ScimResponse {
    return {
      status: 200,
      body: renderRole(role, this.locations, true, api),
      location: this.locations.role(role.id, api),
    };
  }
}

/**
 * Without the entry's own scope the valve only let the request in on an operation scope;
 * then each section written needs its operation scope, as WSO2 Identity Server checks
 * `internal_role_mgt_users_update`, `_groups_update` and `_permissions_update` for the `users`,
 * `groups` and `permissions` parts of a role write.
 */
function checkRoleOperationScopes(sections: readonly string[], access: Access): void {
  if (access.granted) return;
  for (const section of sections) {
    const scope = ROLE_OPERATION_SCOPES[section as keyof typeof ROLE_OPERATION_SCOPES];
    if (!access.scopes.has(scope)) throw forbidden();
  }
}

/** Reads an integer paging parameter; anything but a safe integer is a 400. */
function readInteger(value: unknown, name: string): number | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const n = typeof value === 'number' || typeof value === 'string' ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n)) {
    throw badRequest(`The value of ${name} must be an integer: ${String(value).slice(0, 40)}`);
  }
  return n;
}

/**
 * RFC 7644 §3.4.2.4: a `startIndex` below 1 means 1, a negative `count` means 0; `count` is
 * capped at the advertised `maxResults`.
 */
/** A search's answer, or undefined when its filter names an attribute the resource lacks. */
async function noneIfUnknownAttribute(
  run: () => ScimResponse | Promise<ScimResponse>,
): Promise<ScimResponse | undefined> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof ScimError && error.detail === UNKNOWN_FILTER_ATTRIBUTE().detail) {
      return undefined;
    }
    throw error;
  }
}

function readPage(query: ListQuery): Page {
  const startIndex = Math.max(1, readInteger(query.startIndex, 'startIndex') ?? 1);
  const count = Math.min(
    MAX_COUNT,
    Math.max(0, readInteger(query.count, 'count') ?? DEFAULT_COUNT),
  );
  return { startIndex, count };
}
