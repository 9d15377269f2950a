import { randomUUID } from 'node:crypto';
import { type Clock, isJsonObject, type JsonObject, systemClock } from '@mcp-identity/common';
import { type Db, inTransaction, statement } from '../store/db.js';
import { ReadCache } from '../store/read-cache.js';
import { badRequest, conflict, invalidSyntax, notFound } from './errors.js';
import { assertIfMatch } from './etag.js';
import {
  entryMatches,
  evaluate,
  type FilterSubject,
  type FilterTree,
  parseFilter,
  textValues,
  valueFilterPolicy,
} from './filter.js';
import type { PatchOperation } from './patch.js';
import type { SortAttribute } from './sort.js';

export const GROUP_NAME_PATTERN = '^[\\S]{3,30}$';
const GROUP_NAME = new RegExp(GROUP_NAME_PATTERN);

export type Member = { value: string; display: string; kind: string };
export type GroupRecord = {
  id: string;
  displayName: string;
  externalId?: string;
  members: Member[];
  created: string;
  lastModified: string;
  /** Incremented by every write of the group, its members included (`db.ts` triggers). */
  version: number;
};

/**
 * SCIM Groups (RFC 7643 §4.2) with WSO2 Identity Server's member rules and texts; where they
 * deliberately differ is listed in the README (WSO2 compatibility).
 */
export class GroupStore {
  private readonly userGroups: UserRefs;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock = systemClock,
  ) {
    this.userGroups = new UserRefs(
      db,
      `SELECT m.user_id AS userId, g.id AS value, g.display_name AS display FROM group_members m
       JOIN groups_ g ON g.id = m.group_id WHERE m.user_id IN (SELECT value FROM json_each(?))
       ORDER BY g.display_name_lc`,
    );
  }

  create(body: unknown): GroupRecord {
    if (!isJsonObject(body)) throw invalidSyntax('The request body must be a JSON object.');
    const displayName = checkName(body.displayName);
    const externalId = readExternalId(body.externalId);
    const id = randomUUID();
    const at = new Date(this.clock()).toISOString();
    return inTransaction(this.db, () => {
      this.assertNameFree(displayName);
      statement(
        this.db,
        'INSERT INTO groups_ (id, display_name, display_name_lc, external_id, created_at, modified_at) VALUES (?, ?, ?, ?, ?, ?)',
      ).run(id, displayName, displayName.toLowerCase(), externalId, at, at);
      this.addMembers(id, readMembers(body.members ?? []));
      return this.get(id);
    });
  }

  get(id: string): GroupRecord {
    const record = this.find(id);
    if (!record) throw notFound('Group not found in the user store.');
    return record;
  }

  find(id: string): GroupRecord | undefined {
    const row = statement(this.db, 'SELECT * FROM groups_ WHERE id = ?').get(id) as
      | {
          id: string;
          display_name: string;
          external_id: string | null;
          created_at: string;
          modified_at: string;
          version: number;
        }
      | undefined;
    if (!row) return undefined;
    const members = statement(
      this.db,
      `SELECT u.id AS value, u.user_name AS display, u.kind AS kind FROM group_members m
         JOIN users u ON u.id = m.user_id WHERE m.group_id = ? ORDER BY u.user_name_lc`,
    ).all(id) as Member[];
    return {
      id: row.id,
      displayName: row.display_name,
      ...(row.external_id === null ? {} : { externalId: row.external_id }),
      members,
      created: row.created_at,
      lastModified: row.modified_at,
      version: row.version,
    };
  }

  list(tree: FilterTree | undefined): GroupRecord[] {
    const ids = statement(this.db, 'SELECT id FROM groups_ ORDER BY rowid').all() as {
      id: string;
    }[];
    const groups = ids.map(({ id }) => this.find(id)!);
    return tree ? groups.filter((g) => evaluate(tree, groupSubject(g))) : groups;
  }

  /** `ifMatch`: the request's `If-Match`, checked in the write's transaction (see `etag.ts`). */
  replace(id: string, body: unknown, ifMatch?: string): GroupRecord {
    if (!isJsonObject(body)) throw invalidSyntax('The request body must be a JSON object.');
    return inTransaction(this.db, () => {
      const group = this.find(id);
      if (!group) throw notFound(`No group with the id : ${id} in the user store.`);
      assertIfMatch(ifMatch, group.version);
      if (body.displayName !== undefined) this.rename(group, body.displayName);
      this.setExternalId(id, readExternalId(body.externalId));
      statement(this.db, 'DELETE FROM group_members WHERE group_id = ?').run(id);
      this.addMembers(id, readMembers(body.members ?? []));
      this.touch(id);
      return this.get(id);
    });
  }

  /** Applies a PatchOp atomically: concurrent member patches serialise on the write lock. */
  patch(id: string, operations: PatchOperation[], ifMatch?: string): GroupRecord {
    return inTransaction(this.db, () => {
      const group = this.find(id);
      if (!group) throw notFound(`No group with the id : ${id} in the user store.`);
      assertIfMatch(ifMatch, group.version);
      for (const operation of operations) {
        for (const [path, value] of splitOperation(operation)) {
          this.applyOperation(group, operation.op, path, value);
        }
      }
      this.touch(id);
      return this.get(id);
    });
  }

  delete(id: string, ifMatch?: string): void {
    inTransaction(this.db, () => {
      const version = statement(this.db, 'SELECT version FROM groups_ WHERE id = ?')
        .pluck()
        .get(id) as number | undefined;
      if (version === undefined) {
        throw notFound('Specified resource (e.g., Group) or endpoint does not exist.');
      }
      assertIfMatch(ifMatch, version);
      statement(this.db, 'DELETE FROM groups_ WHERE id = ?').run(id);
    });
  }

  /** The groups of each of `userIds` (one query for a whole page of users). */
  groupsOfUsers(userIds: readonly string[]): UserRefsByUser {
    return this.userGroups.of(userIds);
  }

  findByName(name: string): GroupRecord | undefined {
    const row = statement(this.db, 'SELECT id FROM groups_ WHERE display_name_lc = ?').get(
      name.toLowerCase(),
    ) as { id: string } | undefined;
    return row ? this.find(row.id) : undefined;
  }

  private applyOperation(group: GroupRecord, op: string, path: string, value: unknown): void {
    const lowerPath = path.trim().toLowerCase();
    if (lowerPath === 'displayname') {
      if (op === 'remove') throw badRequest('Attribute displayName cannot be removed.');
      this.rename(group, value);
      return;
    }
    if (lowerPath === 'externalid') {
      this.setExternalId(group.id, op === 'remove' ? null : readExternalId(value));
      return;
    }
    if (lowerPath === 'members') {
      if (op === 'remove') {
        // RFC 7644 §3.5.2.2: without a value every member goes; Entra names the ones to remove.
        // Read now: earlier operations of the same request may have added members.
        const members = this.get(group.id).members;
        if (value === undefined || value === null) this.removeMembers(group.id, members);
        else this.removeMembers(group.id, listedMembers(members, value));
        return;
      }
      const members = readMembers(value);
      if (op === 'replace') {
        statement(this.db, 'DELETE FROM group_members WHERE group_id = ?').run(group.id);
      }
      this.addMembers(group.id, members);
      return;
    }
    const filter = /^members\[(.*)\]$/is.exec(path.trim());
    if (filter && op === 'remove') {
      const tree = parseFilter(filter[1]!, MEMBER_FILTER);
      this.removeMembers(
        group.id,
        this.get(group.id).members.filter((m) => entryMatches(tree, 'members', m)),
      );
      return;
    }
    throw badRequest('Not a valid attribute.', 'invalidPath');
  }

  private removeMembers(groupId: string, members: readonly Member[]): void {
    const remove = statement(
      this.db,
      'DELETE FROM group_members WHERE group_id = ? AND user_id = ?',
    );
    for (const member of members) remove.run(groupId, member.value);
  }

  private setExternalId(groupId: string, externalId: string | null): void {
    statement(this.db, 'UPDATE groups_ SET external_id = ? WHERE id = ?').run(externalId, groupId);
  }

  private addMembers(groupId: string, members: readonly { value: string }[]): void {
    const lookup = statement(this.db, 'SELECT id FROM users WHERE id = ?');
    const insert = statement(
      this.db,
      'INSERT OR IGNORE INTO group_members (group_id, user_id) VALUES (?, ?)',
    );
    for (const member of members) {
      const user = lookup.get(member.value) as { id: string } | undefined;
      if (!user) {
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
    statement(this.db, 'UPDATE groups_ SET display_name = ?, display_name_lc = ? WHERE id = ?').run(
      name,
      name.toLowerCase(),
      group.id,
    );
    group.displayName = name;
  }

  private touch(id: string): void {
    statement(
      this.db,
      'UPDATE groups_ SET modified_at = ?, version = version + 1 WHERE id = ?',
    ).run(new Date(this.clock()).toISOString(), id);
  }

  private assertNameFree(name: string): void {
    if (
      statement(this.db, 'SELECT 1 FROM groups_ WHERE display_name_lc = ?').get(name.toLowerCase())
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
 * Members of an add/replace: a JSON array of `{value, ...}`. Only `value` is read: `display`,
 * `type` and `$ref` are readOnly or immutable (RFC 7643 §4.2, our /Schemas) and so ignored in a
 * request (RFC 7643 §2.2); responses give the referenced user's name, type and location.
 */
function readMembers(value: unknown): { value: string }[] {
  if (!Array.isArray(value)) throw invalidSyntax('Members must be a JSON array.');
  return value.map((m) => {
    if (!isJsonObject(m)) throw invalidSyntax('Each member must be a JSON object.');
    if (typeof m.value !== 'string' || !m.value) {
      throw badRequest('The value of a member cannot be empty.');
    }
    return { value: m.value };
  });
}

/** A group or role as listed on a user. */
export type UserRef = { value: string; display: string };

/** Groups or roles listed on users, by user id; shared between readers, so read-only. */
export type UserRefsByUser = ReadonlyMap<string, readonly Readonly<UserRef>[]>;

/**
 * The `{userId, value, display}` rows a query selects for a page of users (bound as a JSON
 * array), as lists of `{value, display}` per user in row order; kept until the next write.
 */
export class UserRefs {
  private readonly pages: ReadCache<string, UserRefsByUser>;

  constructor(
    private readonly db: Db,
    private readonly sql: string,
  ) {
    this.pages = new ReadCache(db, 64);
  }

  of(userIds: readonly string[]): UserRefsByUser {
    return this.pages.get(userIds.join(' '), () => {
      const rows = statement(this.db, this.sql).all(JSON.stringify(userIds)) as (UserRef & {
        userId: string;
      })[];
      const byUser = new Map<string, UserRef[]>();
      for (const { userId, value, display } of rows) {
        const list = byUser.get(userId) ?? [];
        list.push({ value, display });
        byUser.set(userId, list);
      }
      return byUser;
    });
  }
}

/** The current members a remove operation's value lists, by `value` or else by `display`. */
function listedMembers(members: readonly Member[], value: unknown): Member[] {
  if (!Array.isArray(value)) throw invalidSyntax('Members must be a JSON array.');
  const ids = new Set<string>();
  const names = new Set<string>();
  for (const entry of value) {
    if (!isJsonObject(entry)) throw invalidSyntax('Each member must be a JSON object.');
    if (typeof entry.value === 'string') ids.add(entry.value);
    else if (typeof entry.display === 'string') names.add(entry.display.toLowerCase());
    else throw badRequest('The value of a member cannot be empty.');
  }
  return members.filter((m) => ids.has(m.value) || names.has(m.display.toLowerCase()));
}

function readExternalId(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw badRequest('Attribute externalId must be a string.');
  return value;
}

const MEMBER_FILTER = valueFilterPolicy(
  (sub) => groupValuePath('members')!.resolve(sub),
  () => badRequest('Not a valid attribute.', 'invalidPath'),
);

/** A pathless operation is the same as one operation per key of its value object. */
function splitOperation(operation: PatchOperation): [string, unknown][] {
  if (operation.path) return [[operation.path, operation.value]];
  if (!isJsonObject(operation.value))
    throw invalidSyntax('Value of a pathless operation must be an object.');
  return Object.entries(operation.value).filter(
    ([key]) => !['schemas', 'id', 'meta'].includes(key.toLowerCase()),
  );
}

function groupSubject(group: GroupRecord): FilterSubject {
  return {
    values(attribute) {
      switch (attribute) {
        case 'displayName':
          return [group.displayName];
        case 'id':
          return [group.id];
        case 'externalId':
          return textValues(group.externalId);
        case 'members.value':
          return group.members.map((m) => m.value);
        case 'members.display':
          return group.members.map((m) => m.display);
        case 'members.type':
          return group.members.map(() => 'User');
        case 'meta.created':
          return [group.created];
        default:
          return [group.lastModified];
      }
    },
    entries: () => group.members,
  };
}

const GROUP_FILTER_KEYS = [
  'displayName',
  'id',
  'externalId',
  'members.value',
  'members.display',
  'members.type',
  'meta.created',
  'meta.lastModified',
];

/** Filterable group attributes, matched case-insensitively. */
export function groupFilterKey(attribute: string): string | undefined {
  const plain = attribute.replace(/^urn:ietf:params:scim:schemas:core:2\.0:Group:/i, '');
  if (plain.toLowerCase() === 'members') return 'members.value';
  return GROUP_FILTER_KEYS.find((k) => k.toLowerCase() === plain.toLowerCase());
}

/** `members[...]`: value filters on the members of a group. */
export function groupValuePath(attribute: string) {
  if (groupFilterKey(attribute) !== 'members.value') return undefined;
  return {
    attribute: 'members',
    resolve: (sub: string) => {
      const key = groupFilterKey(`members.${sub}`);
      return key?.startsWith('members.') ? key : undefined;
    },
  };
}

/** What a group sorts by (RFC 7644 §3.4.2.3): its filterable attributes; `members` by value. */
export function groupSortAttribute(attribute: string): SortAttribute | undefined {
  const key = groupFilterKey(attribute);
  if (!key) return undefined;
  const path = key.split('.');
  return {
    path,
    multiValued: path[0] === 'members',
    caseExact: key !== 'displayName' && key !== 'members.display',
  };
}

/** A group as `sortValue` reads it: the attributes of its representation. */
export function groupSortView(group: GroupRecord): JsonObject {
  return {
    id: group.id,
    displayName: group.displayName,
    ...(group.externalId === undefined ? {} : { externalId: group.externalId }),
    members: group.members,
    meta: { created: group.created, lastModified: group.lastModified },
  };
}
