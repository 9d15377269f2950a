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
import {
  type GroupRecord,
  type GroupStore,
  groupFilterKey,
  groupSortAttribute,
  groupSortView,
  groupValuePath,
} from './groups.js';
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
import {
  compareSortValues,
  readSort,
  type Sort,
  sortResources,
  sortValue,
  UNKNOWN_SORT_ATTRIBUTE,
} from './sort.js';
import type { Page, UserKind, UserStore } from './users.js';

/** `etag`: the single resource's version (`meta.version`), sent as the `ETag` header. */
export type ScimResponse = { status: number; body?: JsonObject; location?: string; etag?: string };

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
/** How far a sorted root search reads into each resource type (see `searchAllSorted`). */
const MAX_SORTED_ROOT_WINDOW = 5 * MAX_COUNT;

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
      etag: versionOf(rendered),
    };
  }

  getUser(kind: UserKind, id: string): ScimResponse {
    return this.userResponse(kind, this.users.get(kind, id));
  }

  // `ifMatch` (writes): the request's If-Match, RFC 7644 §3.14.

  async replaceUser(
    kind: UserKind,
    id: string,
    body: unknown,
    ifMatch?: string,
  ): Promise<ScimResponse> {
    return this.userResponse(kind, await this.users.replace(kind, id, body, ifMatch));
  }

  async patchUser(
    kind: UserKind,
    id: string,
    body: unknown,
    ifMatch?: string,
  ): Promise<ScimResponse> {
    const operations = readPatchOperations(body);
    return this.userResponse(kind, await this.users.patch(kind, id, operations, ifMatch));
  }

  deleteUser(kind: UserKind, id: string, ifMatch?: string): ScimResponse {
    this.users.delete(kind, id, ifMatch);
    return { status: 204 };
  }

  async listUsers(kind: UserKind, query: ListQuery): Promise<ScimResponse> {
    const page = readPage(query);
    const { total, rows } = await this.searchUsers(kind, query, page);
    return {
      status: 200,
      body: listResponse(total, page.startIndex, this.renderUsers(kind, rows)),
    };
  }

  private searchUsers(kind: UserKind, query: ListQuery, page: Page) {
    const schema = this.users.schema();
    const sort = readSort(query.sortBy, query.sortOrder, (a) => schema.sortAttribute(a));
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
    return this.users.search(kind, tree, page, sort);
  }

  /**
   * Root search (`POST /scim2/.search`, RFC 7644 §3.4.3): users, then groups, as one list paged
   * across both. A filter naming an attribute one resource type lacks matches none of it.
   */
  async searchAll(query: ListQuery): Promise<ScimResponse> {
    const page = readPage(query);
    if (query.sortBy !== undefined && query.sortBy !== '') return this.searchAllSorted(query, page);
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

  /**
   * A sorted root search: the first `startIndex + count - 1` users and groups in sort order,
   * merged. An attribute one resource type lacks is a missing value there (sorted last).
   * Reading is bounded by MAX_SORTED_ROOT_WINDOW resources of each type.
   */
  private async searchAllSorted(query: ListQuery, page: Page): Promise<ScimResponse> {
    const window = page.startIndex - 1 + page.count;
    if (window > MAX_SORTED_ROOT_WINDOW) {
      throw badRequest(
        `A sorted root search answers the first ${MAX_SORTED_ROOT_WINDOW} resources: startIndex + count - 1 must not exceed it.`,
      );
    }
    const schema = this.users.schema();
    const userSort = noneIfUnsortable(() =>
      readSort(query.sortBy, query.sortOrder, (a) => schema.sortAttribute(a)),
    );
    const groupSort = noneIfUnsortable(() =>
      readSort(query.sortBy, query.sortOrder, groupSortAttribute),
    );
    const sort = userSort ?? groupSort;
    // Neither type knows the attribute: the users' error says so.
    if (!sort) readSort(query.sortBy, query.sortOrder, (a) => schema.sortAttribute(a));
    const byType = (q: ListQuery, typeSort: Sort | undefined): ListQuery => ({
      ...q,
      sortBy: typeSort ? q.sortBy : undefined,
    });
    const users = await noneIfUnknownAttribute(() =>
      this.searchUsers('user', byType(query, userSort), { startIndex: 1, count: window }),
    );
    const groups = await noneIfUnknownAttribute(() => this.sortedGroups(byType(query, groupSort)));
    if (!users && !groups) throw UNKNOWN_FILTER_ATTRIBUTE();
    type Entry = { key: string | number | undefined; render: () => JsonObject };
    const userEntries: Entry[] = this.renderUsers('user', users?.rows ?? []).map((u, i) => ({
      key: userSort ? sortValue(users!.rows[i]!, userSort) : undefined,
      render: () => u,
    }));
    const groupEntries: Entry[] = (groups ?? []).slice(0, window).map((g) => ({
      key: groupSort ? sortValue(groupSortView(g), groupSort) : undefined,
      render: () => renderGroup(g, this.locations),
    }));
    const merged: Entry[] = [];
    let [u, g] = [0, 0];
    while (merged.length < window && (u < userEntries.length || g < groupEntries.length)) {
      const takeUser =
        g >= groupEntries.length ||
        (u < userEntries.length &&
          compareSortValues(userEntries[u]!.key, groupEntries[g]!.key, sort!.descending) <= 0);
      merged.push(takeUser ? userEntries[u++]! : groupEntries[g++]!);
    }
    const total = (users?.total ?? 0) + (groups?.length ?? 0);
    const resources = merged.slice(page.startIndex - 1).map((e) => e.render());
    return { status: 200, body: listResponse(total, page.startIndex, resources) };
  }

  // Groups

  createGroup(body: unknown): ScimResponse {
    const group = this.groups.create(body);
    return { ...this.groupResponse(group), status: 201 };
  }

  getGroup(id: string): ScimResponse {
    return this.groupResponse(this.groups.get(id));
  }

  replaceGroup(id: string, body: unknown, access: Access, ifMatch?: string): ScimResponse {
    if (groupWriteAddsMembers(body))
      assertMayGrant(access, permissionsOfGroup(this.roles, id), 'update');
    return this.groupResponse(this.groups.replace(id, body, ifMatch));
  }

  patchGroup(id: string, body: unknown, access: Access, ifMatch?: string): ScimResponse {
    const operations = readPatchOperations(body);
    if (groupWriteAddsMembers(operations)) {
      assertMayGrant(access, permissionsOfGroup(this.roles, id), 'update');
    }
    return this.groupResponse(this.groups.patch(id, operations, ifMatch));
  }

  deleteGroup(id: string, ifMatch?: string): ScimResponse {
    this.groups.delete(id, ifMatch);
    return { status: 204 };
  }

  listGroups(query: ListQuery): ScimResponse {
    const page = readPage(query);
    return this.page(page, this.sortedGroups(query), (g) => renderGroup(g, this.locations));
  }

  /** The groups a query selects, in its sort order (groups are read whole, see `list`). */
  private sortedGroups(query: ListQuery): GroupRecord[] {
    const sort = readSort(query.sortBy, query.sortOrder, groupSortAttribute);
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
    const groups = this.groups.list(tree);
    return sort ? sortResources(groups, sort, groupSortView) : groups;
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
    return {
      status: 200,
      body,
      location: this.locations.user(kind, record.id as string),
      etag: versionOf(body),
    };
  }

  private groupResponse(group: ReturnType<GroupStore['get']>): ScimResponse {
    const body = renderGroup(group, this.locations);
    return { status: 200, body, location: this.locations.group(group.id), etag: versionOf(body) };
  }

  private roleResponse(role: ReturnType<RoleStore['get']>, api: RoleApi): ScimResponse {
    return {
      status: 200,
      body: renderRole(role, this.locations, true, api),
      location: this.locations.role(role.id, api),
    };
  }
}

/** A rendered resource's `meta.version`. */
function versionOf(resource: JsonObject): string | undefined {
  const meta = resource.meta as JsonObject | undefined;
  return typeof meta?.version === 'string' ? meta.version : undefined;
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
async function noneIfUnknownAttribute<T>(run: () => T | Promise<T>): Promise<T | undefined> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof ScimError && error.detail === UNKNOWN_FILTER_ATTRIBUTE().detail) {
      return undefined;
    }
    throw error;
  }
}

/** A root search's sort for one resource type, or undefined when the type lacks the attribute. */
function noneIfUnsortable(read: () => Sort | undefined): Sort | undefined {
  try {
    return read();
  } catch (error) {
    if (error instanceof ScimError && error.detail === UNKNOWN_SORT_ATTRIBUTE) return undefined;
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
