import { randomUUID } from 'node:crypto';
import { type Clock, isJsonObject, systemClock } from '@mcp-identity/common';
import { type Db, inTransaction, statement } from '../store/db.js';
import { badRequest, conflict, invalidSyntax, notFound } from './errors.js';
import {
  entryMatches,
  evaluate,
  type FilterTree,
  parseFilter,
  valueFilterPolicy,
} from './filter.js';
import { UserRefs, type UserRefsByUser } from './groups.js';
import type { PatchOperation } from './patch.js';

/** The root organization every organization-audience role belongs to. */
export const ROOT_ORGANIZATION = {
  id: '10084a8d-113f-4211-a0d5-efe36b082211',
  name: 'carbon.super',
};

export type RoleAudience = { type: 'organization' | 'application'; value: string; display: string };
export type RoleRecord = {
  id: string;
  displayName: string;
  audience: RoleAudience;
  users: { value: string; display: string }[];
  groups: { value: string; display: string }[];
  permissions: string[];
  created: string;
  lastModified: string;
};

/** Which member lists an operation touches: what WSO2 checks operation scopes against. */
export type RoleSection = 'users' | 'groups' | 'permissions';

const SECTIONS: readonly RoleSection[] = ['users', 'groups', 'permissions'];

export type RoleStoreOptions = {
  knownScopes: () => ReadonlySet<string>;
  applicationName: (clientId: string) => string | undefined;
  clock?: Clock;
};

/**
 * WSO2 Identity Server's Roles v2 (`/scim2/v2/Roles`, schema
 * `urn:ietf:params:scim:schemas:extension:2.0:Role`): audience, users, groups and permissions
 * (scopes).
 */
export class RoleStore {
  private readonly clock: Clock;
  private readonly userRoles: UserRefs;

  constructor(
    private readonly db: Db,
    private readonly options: RoleStoreOptions,
  ) {
    this.clock = options.clock ?? systemClock;
    this.userRoles = new UserRefs(
      db,
      `SELECT ru.user_id AS userId, r.id AS value, r.display_name AS display FROM role_users ru
       JOIN roles r ON r.id = ru.role_id WHERE ru.user_id IN (SELECT value FROM json_each(?))
       ORDER BY r.display_name`,
    );
  }

  /** Sections a create or PUT body writes to. */
  static sectionsOfBody(body: unknown): RoleSection[] {
    if (!isJsonObject(body)) return [];
    return SECTIONS.filter((s) => Array.isArray(body[s]) && (body[s] as unknown[]).length > 0);
  }

  /** Sections a PATCH touches (by path prefix, or keys of a pathless value). */
  static sectionsOfPatch(operations: readonly PatchOperation[]): RoleSection[] {
    const touched = new Set<RoleSection>();
    for (const op of operations) {
      const names = op.path ? [op.path] : isJsonObject(op.value) ? Object.keys(op.value) : [];
      for (const name of names) {
        const section = SECTIONS.find((s) => name.toLowerCase().startsWith(s));
        if (section) touched.add(section);
      }
    }
    return [...touched];
  }

  create(body: unknown): RoleRecord {
    if (!isJsonObject(body)) throw invalidSyntax('The request body must be a JSON object.');
    const displayName = checkName(body.displayName);
    const audience = this.readAudience(body.audience);
    const id = randomUUID();
    const at = new Date(this.clock()).toISOString();
    return inTransaction(this.db, () => {
      this.assertNameFree(displayName, audience);
      statement(
        this.db,
        `INSERT INTO roles (id, display_name, audience_type, audience_value, created_at, modified_at)
           VALUES (?, ?, ?, ?, ?, ?)`,
      ).run(id, displayName, audience.type, audience.value, at, at);
      this.add(id, 'users', body.users ?? []);
      this.add(id, 'groups', body.groups ?? []);
      this.add(id, 'permissions', body.permissions ?? []);
      return this.get(id);
    });
  }

  get(id: string): RoleRecord {
    const record = this.find(id);
    if (!record) {
      throw notFound(
        `A role doesn't exist with id: ${id} in the tenantDomain: ${ROOT_ORGANIZATION.name}`,
      );
    }
    return record;
  }

  find(id: string): RoleRecord | undefined {
    const row = statement(this.db, 'SELECT * FROM roles WHERE id = ?').get(id) as
      | {
          id: string;
          display_name: string;
          audience_type: RoleAudience['type'];
          audience_value: string;
          created_at: string;
          modified_at: string;
        }
      | undefined;
    if (!row) return undefined;
    const users = statement(
      this.db,
      `SELECT u.id AS value, u.user_name AS display FROM role_users r JOIN users u ON u.id = r.user_id
         WHERE r.role_id = ? ORDER BY u.user_name_lc`,
    ).all(id) as RoleRecord['users'];
    const groups = statement(
      this.db,
      `SELECT g.id AS value, g.display_name AS display FROM role_groups r JOIN groups_ g ON g.id = r.group_id
         WHERE r.role_id = ? ORDER BY g.display_name_lc`,
    ).all(id) as RoleRecord['groups'];
    const permissions = (
      statement(this.db, 'SELECT scope FROM role_permissions WHERE role_id = ? ORDER BY scope').all(
        id,
      ) as { scope: string }[]
    ).map((p) => p.scope);
    return {
      id: row.id,
      displayName: row.display_name,
      audience: this.audienceOf(row.audience_type, row.audience_value),
      users,
      groups,
      permissions,
      created: row.created_at,
      lastModified: row.modified_at,
    };
  }

  list(tree?: FilterTree): RoleRecord[] {
    const ids = statement(this.db, 'SELECT id FROM roles ORDER BY rowid').all() as { id: string }[];
    const roles = ids.map(({ id }) => this.find(id)!);
    if (!tree) return roles;
    return roles.filter((r) =>
      evaluate(tree, { values: (a) => [roleValue(r, a)], entries: () => [] }),
    );
  }

  findByName(name: string): RoleRecord | undefined {
    const row = statement(
      this.db,
      "SELECT id FROM roles WHERE display_name = ? AND audience_type = 'organization'",
    ).get(name) as { id: string } | undefined;
    return row ? this.find(row.id) : undefined;
  }

  replace(id: string, body: unknown): RoleRecord {
    if (!isJsonObject(body)) throw invalidSyntax('The request body must be a JSON object.');
    return inTransaction(this.db, () => {
      const role = this.get(id);
      if (body.displayName !== undefined) this.rename(role, body.displayName);
      for (const section of SECTIONS) {
        this.clear(id, section);
        this.add(id, section, body[section] ?? []);
      }
      this.touch(id);
      return this.get(id);
    });
  }

  patch(id: string, operations: readonly PatchOperation[]): RoleRecord {
    return inTransaction(this.db, () => {
      const role = this.get(id);
      for (const { op, path, value } of operations) {
        const entries: [string, unknown][] = path
          ? [[path, value]]
          : isJsonObject(value)
            ? Object.entries(value).filter(([k]) => k !== 'schemas')
            : [];
        if (!path && !isJsonObject(value)) {
          throw invalidSyntax('Value of a pathless operation must be an object.');
        }
        for (const [target, v] of entries) this.applyOperation(role, op, target, v);
      }
      this.touch(id);
      return this.get(id);
    });
  }

  delete(id: string): void {
    if (statement(this.db, 'DELETE FROM roles WHERE id = ?').run(id).changes === 0) {
      throw notFound(
        `A role doesn't exist with id: ${id} in the tenantDomain: ${ROOT_ORGANIZATION.name}`,
      );
    }
  }

  /** Scopes granted to a user through roles assigned directly or through groups. */
  permissionsOfUser(userId: string): Set<string> {
    const rows = statement(
      this.db,
      `SELECT p.scope FROM role_permissions p WHERE p.role_id IN (
           SELECT role_id FROM role_users WHERE user_id = ?
           UNION SELECT rg.role_id FROM role_groups rg JOIN group_members gm ON gm.group_id = rg.group_id
           WHERE gm.user_id = ?)`,
    ).all(userId, userId) as { scope: string }[];
    return new Set(rows.map((r) => r.scope));
  }

  /** Roles of each of `userIds` (direct only), for the user representation. */
  rolesOfUsers(userIds: readonly string[]): UserRefsByUser {
    return this.userRoles.of(userIds);
  }

  private applyOperation(role: RoleRecord, op: string, path: string, value: unknown): void {
    if (path.toLowerCase() === 'displayname') {
      if (op === 'remove') throw badRequest('Attribute displayName cannot be removed.');
      this.rename(role, value);
      return;
    }
    // `users[value eq <id>]` (WSO2's documented form), or any filter on `value`/`display`.
    const filtered = /^(users|groups|permissions)\[(.+)\]$/is.exec(path.trim());
    if (filtered && op === 'remove') {
      const section = filtered[1]!.toLowerCase() as RoleSection;
      const tree = parseFilter(
        filtered[2]!,
        valueFilterPolicy(
          (sub) =>
            ['value', 'display'].includes(sub.toLowerCase())
              ? `${section}.${sub.toLowerCase()}`
              : undefined,
          () => badRequest(`Invalid path: ${path}`, 'invalidPath'),
        ),
      );
      // Read now: earlier operations of the same request may have added entries.
      const current = this.get(role.id);
      const entries =
        section === 'permissions'
          ? current.permissions.map((p) => ({ value: p, display: p }))
          : current[section];
      for (const entry of entries) {
        if (entryMatches(tree, section, entry)) this.removeOne(role.id, section, entry.value);
      }
      return;
    }
    const section = SECTIONS.find((s) => s === path.toLowerCase());
    if (!section) throw badRequest(`Invalid path: ${path}`, 'invalidPath');
    if (op === 'remove') {
      if (Array.isArray(value)) {
        for (const entry of value) {
          if (isJsonObject(entry) && typeof entry.value === 'string') {
            this.removeOne(role.id, section, entry.value);
          }
        }
      } else {
        this.clear(role.id, section);
      }
      return;
    }
    if (op === 'replace') this.clear(role.id, section);
    this.add(role.id, section, value);
  }

  private add(roleId: string, section: RoleSection, value: unknown): void {
    if (!Array.isArray(value)) throw invalidSyntax(`Attribute ${section} must be a JSON array.`);
    for (const entry of value) {
      // Roles v1 lists permissions as plain strings.
      const ref = section === 'permissions' && typeof entry === 'string' ? entry : entry?.value;
      if (typeof ref !== 'string' || !ref) {
        throw badRequest(`Each entry of ${section} needs a value.`);
      }
      if (section === 'users') {
        if (!statement(this.db, 'SELECT 1 FROM users WHERE id = ?').get(ref)) {
          throw badRequest(`User id: ${ref} does not exist.`);
        }
        statement(this.db, 'INSERT OR IGNORE INTO role_users VALUES (?, ?)').run(roleId, ref);
      } else if (section === 'groups') {
        if (!statement(this.db, 'SELECT 1 FROM groups_ WHERE id = ?').get(ref)) {
          throw badRequest(`Group id: ${ref} does not exist.`);
        }
        statement(this.db, 'INSERT OR IGNORE INTO role_groups VALUES (?, ?)').run(roleId, ref);
      } else {
        if (!this.options.knownScopes().has(ref)) {
          throw badRequest(`Permission: ${ref} not found.`);
        }
        statement(this.db, 'INSERT OR IGNORE INTO role_permissions VALUES (?, ?)').run(roleId, ref);
      }
    }
  }

  private removeOne(roleId: string, section: RoleSection, ref: string): void {
    const sql = {
      users: 'DELETE FROM role_users WHERE role_id = ? AND user_id = ?',
      groups: 'DELETE FROM role_groups WHERE role_id = ? AND group_id = ?',
      permissions: 'DELETE FROM role_permissions WHERE role_id = ? AND scope = ?',
    }[section];
    statement(this.db, sql).run(roleId, ref);
  }

  private clear(roleId: string, section: RoleSection): void {
    const table = { users: 'role_users', groups: 'role_groups', permissions: 'role_permissions' }[
      section
    ];
    statement(this.db, `DELETE FROM ${table} WHERE role_id = ?`).run(roleId);
  }

  private rename(role: RoleRecord, value: unknown): void {
    const name = checkName(value);
    if (name !== role.displayName) this.assertNameFree(name, role.audience);
    statement(this.db, 'UPDATE roles SET display_name = ? WHERE id = ?').run(name, role.id);
    role.displayName = name;
  }

  private touch(id: string): void {
    statement(this.db, 'UPDATE roles SET modified_at = ? WHERE id = ?').run(
      new Date(this.clock()).toISOString(),
      id,
    );
  }

  private assertNameFree(name: string, audience: RoleAudience): void {
    const taken = statement(
      this.db,
      'SELECT 1 FROM roles WHERE display_name = ? AND audience_type = ? AND audience_value = ?',
    ).get(name, audience.type, audience.value);
    if (taken) {
      throw conflict(
        `Role already exist for the role name: ${name} audience: ${audience.type} audienceId: ${audience.value}`,
      );
    }
  }

  private readAudience(value: unknown): RoleAudience {
    if (value === undefined) return this.audienceOf('organization', ROOT_ORGANIZATION.id);
    if (!isJsonObject(value) || typeof value.value !== 'string') {
      throw badRequest('Invalid audience.');
    }
    const type = String(value.type ?? 'organization').toLowerCase();
    if (type === 'organization' && value.value === ROOT_ORGANIZATION.id) {
      return this.audienceOf('organization', value.value);
    }
    if (type === 'application' && this.options.applicationName(value.value) !== undefined) {
      return this.audienceOf('application', value.value);
    }
    throw badRequest(`Invalid audience. No ${type} found with the id: ${value.value}`);
  }

  private audienceOf(type: RoleAudience['type'], value: string): RoleAudience {
    const display =
      type === 'organization'
        ? ROOT_ORGANIZATION.name
        : (this.options.applicationName(value) ?? value);
    return { type, value, display };
  }
}

function checkName(value: unknown): string {
  if (typeof value !== 'string' || !value.trim()) {
    throw badRequest('Role displayName is missing or invalid.');
  }
  return value;
}

function roleValue(role: RoleRecord, attribute: string): string {
  if (attribute === 'audience.value') return role.audience.value;
  if (attribute === 'audience.type') return role.audience.type;
  return role.displayName;
}

/** Roles v2 filters only on these attributes. */
export function roleFilterKey(attribute: string): string | undefined {
  return ['displayName', 'audience.value', 'audience.type'].find(
    (k) => k.toLowerCase() === attribute.toLowerCase(),
  );
}
