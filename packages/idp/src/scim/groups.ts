import { randomUUID } from 'node:crypto';
import { type Db, inTransaction } from '../db.js';
import { badRequest, conflict, invalidSyntax, notFound, ScimError } from './errors.js';
import { type Condition, matches } from './filter.js';
import type { PatchOperation } from './patch.js';

export const GROUP_NAME_PATTERN = '^[\\S]{3,30}$';
const GROUP_NAME = new RegExp(GROUP_NAME_PATTERN);

export type Member = { value: string; display: string; kind: string };
export type GroupRecord = {
  id: string;
  displayName: string;
  members: Member[];
  created: string;
  lastModified: string;
};

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Groups with WSO2's member rules (research §1.7). */
export class GroupStore {
  constructor(
    private readonly db: Db,
    private readonly now: () => Date = () => new Date(),
  ) {}

  create(body: unknown): GroupRecord {
    if (!isObject(body)) throw invalidSyntax('The request body must be a JSON object.');
    const displayName = checkName(body.displayName);
    const id = randomUUID();
    const at = this.now().toISOString();
    return inTransaction(this.db, () => {
      this.assertNameFree(displayName);
      this.db
        .prepare(
          'INSERT INTO groups_ (id, display_name, display_name_lc, created_at, modified_at) VALUES (?, ?, ?, ?, ?)',
        )
        .run(id, displayName, displayName.toLowerCase(), at, at);
      this.addMembers(id, readMembers(body.members ?? [], false));
      return this.get(id);
    });
  }

  get(id: string): GroupRecord {
    const record = this.find(id);
    if (!record) throw notFound('Group not found in the user store.');
    return record;
  }

  find(id: string): GroupRecord | undefined {
    const row = this.db.prepare('SELECT * FROM groups_ WHERE id = ?').get(id) as
      | { id: string; display_name: string; created_at: string; modified_at: string }
      | undefined;
    if (!row) return undefined;
    const members = this.db
      .prepare(
        `SELECT u.id AS value, u.user_name AS display, u.kind AS kind FROM group_members m
         JOIN users u ON u.id = m.user_id WHERE m.group_id = ? ORDER BY u.user_name_lc`,
      )
      .all(id) as Member[];
    return {
      id: row.id,
      displayName: row.display_name,
      members,
      created: row.created_at,
      lastModified: row.modified_at,
    };
  }

  list(conditions: readonly Condition[]): GroupRecord[] {
    const ids = this.db.prepare('SELECT id FROM groups_ ORDER BY rowid').all() as { id: string }[];
    return ids
      .map(({ id }) => this.find(id)!)
      .filter((g) => conditions.every((c) => matches(c, groupValues(g, c.attribute))));
  }

  replace(id: string, body: unknown): GroupRecord {
    if (!isObject(body)) throw invalidSyntax('The request body must be a JSON object.');
    return inTransaction(this.db, () => {
      const group = this.find(id);
      if (!group) throw notFound(`No group with the id : ${id} in the user store.`);
      if (body.displayName !== undefined) this.rename(group, body.displayName);
      this.db.prepare('DELETE FROM group_members WHERE group_id = ?').run(id);
      this.addMembers(id, readMembers(body.members ?? [], false));
      this.touch(id);
      return this.get(id);
    });
  }

  /** Applies a PatchOp atomically: concurrent member patches serialise on the write lock. */
  patch(id: string, operations: PatchOperation[]): GroupRecord {
    return inTransaction(this.db, () => {
      const group = this.find(id);
      if (!group) throw notFound(`No group with the id : ${id} in the user store.`);
      for (const operation of operations) {
        for (const [path, value] of splitOperation(operation)) {
          this.applyOperation(group, operation.op, path, value);
        }
      }
      this.touch(id);
      return this.get(id);
    });
  }

  delete(id: string): void {
    if (this.db.prepare('DELETE FROM groups_ WHERE id = ?').run(id).changes === 0) {
      throw notFound('Specified resource (e.g., Group) or endpoint does not exist.');
    }
  }

  groupsOfUser(userId: string): { value: string; display: string }[] {
    return this.db
      .prepare(
        `SELECT g.id AS value, g.display_name AS display FROM group_members m
         JOIN groups_ g ON g.id = m.group_id WHERE m.user_id = ? ORDER BY g.display_name_lc`,
      )
      .all(userId) as { value: string; display: string }[];
  }

  findByName(name: string): GroupRecord | undefined {
    const row = this.db
      .prepare('SELECT id FROM groups_ WHERE display_name_lc = ?')
      .get(name.toLowerCase()) as { id: string } | undefined;
    return row ? this.find(row.id) : undefined;
  }

  private applyOperation(group: GroupRecord, op: string, path: string, value: unknown): void {
    const lowerPath = path.toLowerCase();
    if (lowerPath === 'displayname') {
      if (op === 'remove') throw badRequest('Attribute displayName cannot be removed.');
      this.rename(group, value);
      return;
    }
    if (lowerPath === 'members') {
      if (op === 'remove') {
        this.db.prepare('DELETE FROM group_members WHERE group_id = ?').run(group.id);
        return;
      }
      const members = readMembers(value, true);
      if (op === 'replace') {
        this.db.prepare('DELETE FROM group_members WHERE group_id = ?').run(group.id);
      }
      this.addMembers(group.id, members);
      return;
    }
    const filter = /^members\[(.*)\]$/i.exec(path.trim());
    if (filter && op === 'remove') {
      this.removeMatching(group.id, filter[1]!);
      return;
    }
    throw badRequest('Not a valid attribute.', 'invalidPath');
  }

  /** `members[value eq "<id>"]` / `members[display eq name]`; quotes optional, `eq` only. */
  private removeMatching(groupId: string, expression: string): void {
    const parts = expression.trim().split(/\s+/);
    if (parts.length !== 3) throw badRequest('Invalid filter in the remove path.', 'invalidFilter');
    const [attribute, operator, raw] = parts as [string, string, string];
    if (operator.toLowerCase() !== 'eq') throw new ScimError(501, 'Only Eq filter is supported');
    const value = raw.replace(/^["']|["']$/g, '');
    const column = { value: 'u.id', display: 'u.user_name_lc' }[attribute.toLowerCase()];
    if (!column) throw badRequest('Not a valid attribute.', 'invalidPath');
    this.db
      .prepare(
        `DELETE FROM group_members WHERE group_id = ? AND user_id IN
         (SELECT u.id FROM users u WHERE ${column} = ?)`,
      )
      .run(groupId, column === 'u.id' ? value : value.toLowerCase());
  }

  private addMembers(groupId: string, members: { value: string; display?: string }[]): void {
    const lookup = this.db.prepare('SELECT id, user_name FROM users WHERE id = ?');
    const insert = this.db.prepare(
      'INSERT OR IGNORE INTO group_members (group_id, user_id) VALUES (?, ?)',
    );
    for (const member of members) {
      const user = lookup.get(member.value) as { id: string; user_name: string } | undefined;
      const mismatch =
        member.display !== undefined &&
        user !== undefined &&
        user.user_name.toLowerCase() !== member.display.toLowerCase();
      if (!user || mismatch) {
        throw badRequest(
          `Provided SCIM user Id: ${member.value} doesn't match with the userID obtained from user-store for the provided username.`,
        );
      }
      insert.run(groupId, user.id);
    }
  }

  private rename(group: GroupRecord, value: unknown): void {
    const name = checkName(value);
    if (name.toLowerCase() !== group.displayName.toLowerCase()) this.assertNameFree(name);
    this.db
      .prepare('UPDATE groups_ SET display_name = ?, display_name_lc = ? WHERE id = ?')
      .run(name, name.toLowerCase(), group.id);
    group.displayName = name;
  }

  private touch(id: string): void {
    this.db
      .prepare('UPDATE groups_ SET modified_at = ? WHERE id = ?')
      .run(this.now().toISOString(), id);
  }

  private assertNameFree(name: string): void {
    if (
      this.db.prepare('SELECT 1 FROM groups_ WHERE display_name_lc = ?').get(name.toLowerCase())
    ) {
      throw conflict(`Group with name: ${name} already exists in the system.`);
    }
  }
}

function checkName(value: unknown): string {
  if (typeof value !== 'string' || !GROUP_NAME.test(value)) {
    throw badRequest(
      `Role name not valid. Role name must be a non null string with following format, ${GROUP_NAME_PATTERN}`,
    );
  }
  return value;
}

/**
 * Members of an add/replace: a JSON array; from PATCH each needs both `value` and `display`
 * (WSO2 re-checks that `display` is the user's name).
 */
function readMembers(value: unknown, fromPatch: boolean): { value: string; display?: string }[] {
  if (!Array.isArray(value)) throw invalidSyntax('Members must be a JSON array.');
  return value.map((m) => {
    if (!isObject(m)) throw invalidSyntax('Each member must be a JSON object.');
    if (fromPatch && (m.value === undefined || m.display === undefined)) {
      throw invalidSyntax('A member must have both value and display attributes.');
    }
    if (typeof m.value !== 'string' || !m.value) {
      throw badRequest('The value of a member cannot be empty.');
    }
    if (m.display !== undefined && typeof m.display !== 'string') {
      throw invalidSyntax('The display of a member must be a string.');
    }
    return m.display === undefined ? { value: m.value } : { value: m.value, display: m.display };
  });
}

/** A pathless operation is the same as one operation per key of its value object. */
function splitOperation(operation: PatchOperation): [string, unknown][] {
  if (operation.path) return [[operation.path, operation.value]];
  if (!isObject(operation.value))
    throw invalidSyntax('Value of a pathless operation must be an object.');
  return Object.entries(operation.value).filter(([key]) => key !== 'schemas' && key !== 'id');
}

function groupValues(group: GroupRecord, attribute: string): string[] {
  switch (attribute) {
    case 'displayName':
      return [group.displayName];
    case 'id':
      return [group.id];
    case 'members.value':
      return group.members.map((m) => m.value);
    case 'members.display':
      return group.members.map((m) => m.display);
    case 'meta.created':
      return [group.created];
    default:
      return [group.lastModified];
  }
}

/** Filterable group attributes, matched case-insensitively. */
export function groupFilterKey(attribute: string): string | undefined {
  const plain = attribute.replace(/^urn:ietf:params:scim:schemas:core:2\.0:Group:/i, '');
  const keys = [
    'displayName',
    'id',
    'members.value',
    'members.display',
    'meta.created',
    'meta.lastModified',
  ];
  if (plain.toLowerCase() === 'members') return 'members.value';
  return keys.find((k) => k.toLowerCase() === plain.toLowerCase());
}
