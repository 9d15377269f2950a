import { randomInt, randomUUID } from 'node:crypto';
import {
  type Clock,
  hashSecret,
  InvalidArgumentError,
  isJsonObject,
  type JsonObject,
  systemClock,
  verifySecret,
} from '@mcp-identity/common';
import { type Db, inTransaction, statement } from '../store/db.js';
import { ReadCache } from '../store/read-cache.js';
import { badRequest, conflict, notFound } from './errors.js';
import { assertIfMatch } from './etag.js';
import {
  type Comparison,
  evaluate,
  type FilterOperator,
  type FilterSubject,
  type FilterTree,
  hasValueFilter,
} from './filter.js';
import type { PatchOperation } from './patch.js';
import { type IdsAnswer, SearchWorker } from './search-worker.js';
import { FOLD_FUNCTION, type Sort, userOrderSql } from './sort.js';
import { applyUserPatch } from './user-patch.js';
import {
  AGENT_ATTRIBUTES,
  AGENT_SCHEMA,
  CORE_USER,
  CUSTOM_USER,
  type CustomAttribute,
  checkValue,
  ENTERPRISE_USER,
  indexedValues,
  UserSchema,
  WSO2_USER,
} from './user-schema.js';

export type UserKind = 'user' | 'agent';
type UserRow = {
  id: string;
  kind: UserKind;
  user_name: string;
  password_hash: string | null;
  doc: string;
  created_at: string;
  modified_at: string;
  version: number;
};

export type Page = { startIndex: number; count: number };
export type SearchResult = { total: number; rows: readonly JsonObject[] };

const READ_ONLY = new Set(['id', 'meta', 'groups', 'roles', 'schemas']);
const PASSWORD_PATTERN = /^[\S]{5,30}$/;
const MAX_CODE_POINT = String.fromCodePoint(0x10ffff);
const COUNT_CACHE_SIZE = 128;
/** Candidate documents checked against a value filter between two turns of the event loop. */
const CHECK_SLICE = 500;
/**
 * Matches of one indexed comparison read on the calling thread before the search is handed to
 * the worker: a bounded index range read costs less than a round trip to the worker thread.
 */
const NARROW_MATCHES = 256;

/** The cache key of a search's SQL and parameters. */
const searchCacheKey = (sql: string, params: readonly unknown[]): string =>
  `${sql}\u0000${JSON.stringify(params)}`;

const notFoundOnGet = () => notFound('User not found in the user store.');

/** Users and agents (agents are users with kind `agent`), persisted in SQLite. */
export class UserStore {
  private schemaCache: UserSchema | undefined;
  /** `totalResults` of filters (see `count`), kept until the users change. */
  private readonly counts: ReadCache<string, number>;
  /**
   * Sorted ids of the comparisons `narrowSearch` answered, or undefined for one it found with
   * more than NARROW_MATCHES users; kept like `counts`.
   */
  private readonly narrow: ReadCache<string, string[] | undefined>;
  /**
   * Pages of users by their ids, read again after any write to the database. Frozen: the same
   * records are rendered for every request that reads the page (rendering copies, never writes).
   */
  private readonly pages: ReadCache<string, readonly JsonObject[]>;
  private worker: SearchWorker | undefined;
  private dummyHash: Promise<string> | undefined;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock = systemClock,
  ) {
    this.pages = new ReadCache(db, 64);
    db.function(FOLD_FUNCTION.name, { deterministic: true }, FOLD_FUNCTION.fold);
    // Writes through this store clear these two (`clearSearchCaches`).
    this.counts = new ReadCache(db, COUNT_CACHE_SIZE, false);
    this.narrow = new ReadCache(db, COUNT_CACHE_SIZE, false);
  }

  schema(): UserSchema {
    if (!this.schemaCache) {
      const custom = statement(
        this.db,
        'SELECT name, type FROM custom_attributes ORDER BY name',
      ).all() as CustomAttribute[];
      this.schemaCache = new UserSchema(custom);
    }
    return this.schemaCache;
  }

  /** Defines (or redefines) an attribute of the custom extension. */
  defineCustomAttribute(attribute: CustomAttribute): void {
    if (!/^[A-Za-z][\w-]*$/.test(attribute.name)) {
      throw new InvalidArgumentError(`Invalid custom attribute name: ${attribute.name}`);
    }
    statement(
      this.db,
      'INSERT INTO custom_attributes (name, type) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET type = excluded.type',
    ).run(attribute.name, attribute.type);
    this.schemaCache = undefined;
  }

  async create(kind: UserKind, body: unknown): Promise<{ row: JsonObject; password?: string }> {
    const { doc, password: given } = this.normalize(body, kind);
    // RFC 7643 §4.1.1 leaves `active` to the provider; it is true unless the client says not.
    doc.active ??= true;
    let password = given;
    if (kind === 'agent') {
      doc.userName = agentUserName(doc.userName);
      assertAgentFields(doc);
      password ??= generatePassword();
    }
    checkPasswordPolicy(kind, password);
    const passwordHash = password === undefined ? null : await hashSecret(password);
    const id = randomUUID();
    const at = new Date(this.clock()).toISOString();
    inTransaction(this.db, () => {
      this.assertUserNameFree(doc.userName as string, kind);
      statement(
        this.db,
        `INSERT INTO users (id, kind, user_name, user_name_lc, password_hash, doc, created_at, modified_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        id,
        kind,
        doc.userName,
        (doc.userName as string).toLowerCase(),
        passwordHash,
        JSON.stringify(doc),
        at,
        at,
      );
      this.writeIndex(id, kind, doc);
    });
    const row = this.getRow(kind, id)!;
    return kind === 'agent' && password !== undefined ? { row, password } : { row };
  }

  get(kind: UserKind, id: string): JsonObject {
    const row = this.getRow(kind, id);
    if (!row) throw notFoundOnGet();
    return row;
  }

  /** The stored document and timestamps of a user, for rendering. */
  getRow(kind: UserKind, id: string): JsonObject | undefined {
    const row = statement(this.db, 'SELECT * FROM users WHERE id = ? AND kind = ?').get(id, kind) as
      | UserRow
      | undefined;
    return row ? toRecord(row) : undefined;
  }

  /** `ifMatch`: the request's `If-Match`, checked in the write's transaction (see `etag.ts`). */
  async replace(kind: UserKind, id: string, body: unknown, ifMatch?: string): Promise<JsonObject> {
    const existing = this.getRow(kind, id);
    if (!existing) throw notFound(`No user with the id : ${id} in the user store.`);
    const { doc, password } = this.normalize(body, kind);
    doc.active ??= true;
    if (kind === 'agent') {
      doc.userName = agentUserName(doc.userName ?? existing.userName);
      assertAgentFields(doc);
    }
    this.assertUserNameUnchanged(existing, doc.userName);
    checkPasswordPolicy(kind, password);
    const passwordHash = password === undefined ? undefined : await hashSecret(password);
    return inTransaction(this.db, () => {
      this.writeRow(kind, id, doc, passwordHash, ifMatch);
      return this.get(kind, id);
    });
  }

  async patch(
    kind: UserKind,
    id: string,
    operations: PatchOperation[],
    ifMatch?: string,
  ): Promise<JsonObject> {
    const schema = this.schema();
    const apply = (): { doc: JsonObject; password?: string } => {
      const existing = this.getRow(kind, id);
      if (!existing) throw notFound(`No user with the id : ${id} in the user store.`);
      const doc = documentOf(existing);
      const password = applyUserPatch(doc, operations, schema);
      const normalized = this.normalize(doc, kind);
      if (kind === 'agent') assertAgentFields(normalized.doc);
      this.assertUserNameUnchanged(existing, normalized.doc.userName);
      return password === undefined ? normalized : { ...normalized, password };
    };
    // Hashing is asynchronous, so it happens first; the operations are then re-applied to the
    // row read inside the write transaction, so concurrent patches compose.
    const { password } = apply();
    checkPasswordPolicy(kind, password);
    const passwordHash = password === undefined ? undefined : await hashSecret(password);
    return inTransaction(this.db, () => {
      this.writeRow(kind, id, apply().doc, passwordHash, ifMatch);
      return this.get(kind, id);
    });
  }

  delete(kind: UserKind, id: string, ifMatch?: string): void {
    this.clearSearchCaches();
    inTransaction(this.db, () => {
      const version = this.versionOf(kind, id);
      if (version === undefined) {
        throw notFound('Specified resource (e.g., User) or endpoint does not exist.');
      }
      assertIfMatch(ifMatch, version);
      statement(this.db, 'DELETE FROM users WHERE id = ? AND kind = ?').run(id, kind);
    });
  }

  private versionOf(kind: UserKind, id: string): number | undefined {
    return statement(this.db, 'SELECT version FROM users WHERE id = ? AND kind = ?')
      .pluck()
      .get(id, kind) as number | undefined;
  }

  /**
   * Indexed search: the filter is compiled to set operations over the covering index of
   * `user_attrs` (`and` INTERSECT, `or` UNION, `not`/`ne` EXCEPT); value filters, which the
   * index answers only approximately, are then checked on the candidate documents. Pages are
   * cut in id order. The SQL runs on a worker thread (its cost depends on the filter and the
   * data, and must not hold the event loop); candidates are checked in slices between which
   * the event loop runs. An in-memory database has no second connection: it runs inline. A
   * single `eq`/`sw` comparison with few matches is answered here (see `narrowSearch`).
   * With a `sort`, SQLite orders the matches (RFC 7644 §3.4.2.3: before paging) and only the
   * page's ids (or, for value filters, the candidates' ids, as without one) come back.
   */
  async search(
    kind: UserKind,
    tree: FilterTree | undefined,
    page: Page,
    sort?: Sort,
  ): Promise<SearchResult> {
    if (this.db.memory) return this.searchInline(kind, tree, page, sort);
    const narrow = tree ? this.narrowSearch(kind, tree, page, sort) : undefined;
    if (narrow) return narrow;
    this.worker ??= new SearchWorker(this.db.name);
    const [ids, params] = this.idsSql(kind, tree);
    const exact = tree !== undefined && hasValueFilter(tree);
    const ordered = sort && {
      sql: `SELECT u.id AS user_id FROM users u WHERE u.id IN (${ids}) ORDER BY ${userOrderSql(sort)}`,
      params,
    };
    let answer: IdsAnswer;
    try {
      answer = await this.worker.run(ids, params, exact ? undefined : page, ordered);
    } catch {
      // A worker that cannot run (or failed) must not fail the search: answer it here.
      return this.searchInline(kind, tree, page, sort);
    }
    if (!tree || !exact) return { total: answer.total, rows: this.rowsByIds(answer.ids) };
    const candidates = answer.ids;
    const result = { total: 0, rows: [] as JsonObject[] };
    for (let start = 0; start < candidates.length; start += CHECK_SLICE) {
      if (start > 0) await new Promise((resolve) => setImmediate(resolve));
      const slice = this.rawRowsByIds(candidates.slice(start, start + CHECK_SLICE));
      this.collect(slice, tree, page, result);
    }
    return result;
  }

  /** The same search on the calling thread (an in-memory database, or no worker). */
  private searchInline(
    kind: UserKind,
    tree: FilterTree | undefined,
    page: Page,
    sort: Sort | undefined,
  ): SearchResult {
    const [ids, params] = this.idsSql(kind, tree);
    const order = sort ? userOrderSql(sort) : 'u.id';
    if (tree && hasValueFilter(tree)) return this.checkCandidates(tree, ids, params, page, order);
    const total = this.count(ids, params);
    if (page.count === 0 || total < page.startIndex) return { total, rows: [] };
    const sql = sort
      ? `SELECT u.* FROM users u WHERE u.id IN (${ids}) ORDER BY ${order} LIMIT ? OFFSET ?`
      : `SELECT u.* FROM users u WHERE u.id IN
         (SELECT user_id FROM (${ids}) ORDER BY user_id LIMIT ? OFFSET ?) ORDER BY u.id`;
    const rows = statement(this.db, sql).all(
      ...params,
      page.count,
      page.startIndex - 1,
    ) as UserRow[];
    return { total, rows: rows.map(toRecord) };
  }

  /**
   * A single `eq` or `sw` comparison on a single-valued indexed attribute reads one range of the
   * covering index; read with a LIMIT it is bounded work, so when it finds at most
   * NARROW_MATCHES users the answer (the same as `searchInline`'s) is cut here. Undefined when
   * the filter has another shape or more matches: the search goes to the worker.
   */
  private narrowSearch(
    kind: UserKind,
    tree: FilterTree,
    page: Page,
    sort: Sort | undefined,
  ): SearchResult | undefined {
    if (tree.op !== 'eq' && tree.op !== 'sw') return undefined;
    const comparison = tree as Comparison;
    const schema = this.schema();
    if (META_COLUMNS[comparison.attribute] || schema.isMultiValued(comparison.attribute)) {
      return undefined;
    }
    const [sql, params] = comparisonSql(comparison, kind, schema, false);
    // A filter found broad before goes straight to the worker (a probe would be wasted work).
    const ids = this.narrow.get(searchCacheKey(sql, params), () => {
      const found = statement(this.db, `${sql} LIMIT ${NARROW_MATCHES + 1}`)
        .pluck()
        .all(...params) as string[];
      // Ids are ASCII, so JavaScript's order is SQLite's (BINARY) order.
      return found.length > NARROW_MATCHES ? undefined : found.sort();
    });
    if (!ids) return undefined;
    // At most NARROW_MATCHES ids: ordering them is bounded work too.
    const ordered = sort
      ? (statement(
          this.db,
          `SELECT u.id FROM users u WHERE u.id IN (SELECT value FROM json_each(?))
           ORDER BY ${userOrderSql(sort)}`,
        )
          .pluck()
          .all(JSON.stringify(ids)) as string[])
      : ids;
    const from = page.startIndex - 1;
    return { total: ids.length, rows: this.rowsByIds(ordered.slice(from, from + page.count)) };
  }

  /** Stops the search worker (the database is being closed). */
  close(): void {
    this.worker?.stop();
    this.worker = undefined;
  }

  private idsSql(kind: UserKind, tree: FilterTree | undefined): [string, unknown[]] {
    return tree
      ? treeSql(tree, kind, this.schema(), false)
      : ['SELECT id AS user_id FROM users WHERE kind = ?', [kind]];
  }

  /** The rows of `ids`, in the order of `ids` (id order, or a sort's). */
  private rawRowsByIds(ids: readonly string[]): UserRow[] {
    if (ids.length === 0) return [];
    const rows = statement(
      this.db,
      'SELECT * FROM users WHERE id IN (SELECT value FROM json_each(?))',
    ).all(JSON.stringify(ids)) as UserRow[];
    const position = new Map(ids.map((id, i) => [id, i]));
    return rows.sort((a, b) => position.get(a.id)! - position.get(b.id)!);
  }

  /** A page of users (a page is short: its ids are the cache key). */
  private rowsByIds(ids: readonly string[]): readonly JsonObject[] {
    return this.pages.get(ids.join(' '), () => deepFreeze(this.rawRowsByIds(ids).map(toRecord)));
  }

  private clearSearchCaches(): void {
    this.counts.clear();
    this.narrow.clear();
  }

  /**
   * `totalResults` of a filter, computed once per state of the users: paging through a broad
   * result, or repeating a search, then costs one page read instead of a count of every match.
   * Writes through this store clear the cache; writes by other connections change SQLite's
   * `data_version`.
   */
  private count(ids: string, params: readonly unknown[]): number {
    return this.counts.get(
      searchCacheKey(ids, params),
      () =>
        (statement(this.db, `SELECT count(*) AS n FROM (${ids})`).get(...params) as { n: number })
          .n,
    );
  }

  private checkCandidates(
    tree: FilterTree,
    ids: string,
    params: unknown[],
    page: Page,
    order: string,
  ): SearchResult {
    const rows = statement(
      this.db,
      `SELECT u.* FROM users u WHERE u.id IN (${ids}) ORDER BY ${order}`,
    ).iterate(...params) as IterableIterator<UserRow>;
    return this.collect(rows, tree, page);
  }

  /** Counts the rows that match into `result`, keeping those of the page (row order). */
  private collect(
    rows: Iterable<UserRow>,
    tree: FilterTree | undefined,
    page: Page,
    result: { total: number; rows: JsonObject[] } = { total: 0, rows: [] },
  ): SearchResult {
    const schema = this.schema();
    for (const row of rows) {
      if (tree && !evaluate(tree, userSubject(row, schema))) continue;
      result.total++;
      if (result.total >= page.startIndex && result.rows.length < page.count) {
        result.rows.push(toRecord(row));
      }
    }
    return result;
  }

  findByUserName(userName: string): { id: string; userName: string; kind: UserKind } | undefined {
    const row = statement(
      this.db,
      'SELECT id, user_name, kind FROM users WHERE user_name_lc = ?',
    ).get(userName.toLowerCase()) as { id: string; user_name: string; kind: UserKind } | undefined;
    return row ? { id: row.id, userName: row.user_name, kind: row.kind } : undefined;
  }

  /**
   * The user's id when `password` matches (login form). An unknown, password-less or disabled
   * user costs the same scrypt check against a dummy hash, so timing does not tell them apart.
   */
  async verifyPassword(
    userName: string,
    password: string,
    verify: (secret: string, stored: string) => Promise<boolean> = verifySecret,
  ): Promise<string | undefined> {
    const row = statement(
      this.db,
      "SELECT id, password_hash FROM users WHERE user_name_lc = ? AND kind = 'user'",
    ).get(userName.toLowerCase()) as { id: string; password_hash: string | null } | undefined;
    const usable = row?.password_hash && this.getRow('user', row.id)?.active !== false;
    if (!usable) {
      this.dummyHash ??= hashSecret(randomUUID());
      await verify(password, await this.dummyHash);
      return undefined;
    }
    return (await verify(password, row.password_hash!)) ? row.id : undefined;
  }

  /** Inserts many users in one transaction without passwords (benchmark seeding). */
  seed(docs: readonly JsonObject[]): void {
    const at = new Date(this.clock()).toISOString();
    const insert = statement(
      this.db,
      `INSERT INTO users (id, kind, user_name, user_name_lc, password_hash, doc, created_at, modified_at)
       VALUES (?, 'user', ?, ?, NULL, ?, ?, ?)`,
    );
    inTransaction(this.db, () => {
      for (const body of docs) {
        const { doc } = this.normalize(body, 'user');
        const id = randomUUID();
        const userName = doc.userName as string;
        insert.run(id, userName, userName.toLowerCase(), JSON.stringify(doc), at, at);
        this.writeIndex(id, 'user', doc);
      }
    });
  }

  /** Writes a user inside the caller's transaction, after its `If-Match` precondition. */
  private writeRow(
    kind: UserKind,
    id: string,
    doc: JsonObject,
    passwordHash: string | undefined,
    ifMatch: string | undefined,
  ): void {
    const version = this.versionOf(kind, id);
    if (version === undefined) throw notFound(`No user with the id : ${id} in the user store.`);
    assertIfMatch(ifMatch, version);
    const at = new Date(this.clock()).toISOString();
    statement(
      this.db,
      `UPDATE users SET doc = ?, modified_at = ?, password_hash = coalesce(?, password_hash),
         version = version + 1 WHERE id = ?`,
    ).run(JSON.stringify(doc), at, passwordHash ?? null, id);
    this.writeIndex(id, kind, doc);
  }

  private writeIndex(id: string, kind: UserKind, doc: JsonObject): void {
    this.clearSearchCaches();
    statement(this.db, 'DELETE FROM user_attrs WHERE user_id = ?').run(id);
    const insert = statement(
      this.db,
      'INSERT INTO user_attrs (user_id, kind, name, value) VALUES (?, ?, ?, ?)',
    );
    for (const [name, value] of indexedValues(doc, this.schema())) {
      insert.run(id, kind, name, value);
    }
  }

  private assertUserNameFree(userName: string, kind: UserKind): void {
    if (this.findByUserName(userName)) {
      throw conflict(
        kind === 'agent'
          ? `Agent with the name: ${userName} already exists in the system.`
          : `User with the name: ${userName} already exists in the system.`,
      );
    }
  }

  private assertUserNameUnchanged(existing: JsonObject, userName: unknown): void {
    if (String(existing.userName).toLowerCase() !== String(userName).toLowerCase()) {
      throw badRequest('Attribute userName cannot be modified.', 'mutability');
    }
  }

  /** Validates a user body against the schema; returns the storable document and password. */
  private normalize(body: unknown, kind: UserKind): { doc: JsonObject; password?: string } {
    if (!isJsonObject(body))
      throw badRequest('The request body must be a JSON object.', 'invalidSyntax');
    const schema = this.schema();
    const doc: JsonObject = {};
    let password: string | undefined;
    for (const [key, value] of Object.entries(body)) {
      if (READ_ONLY.has(key.toLowerCase())) continue;
      // RFC 7643 §2.5: null is "no value", so even an attribute we do not know is no value.
      if (value === null) continue;
      if (key.toLowerCase().startsWith('urn:')) {
        const urn = schema.extensionUrn(key);
        if (!urn) throw badRequest(`No such attribute with the name : ${key}`);
        if (!isJsonObject(value)) throw badRequest(`Attribute ${urn} must be a complex attribute.`);
        const ext: JsonObject = {};
        for (const [name, v] of Object.entries(value)) {
          if (v === null) continue;
          const spec = schema.extensionAttribute(urn, name);
          if (!spec) throw badRequest(`No such attribute with the name : ${urn}:${name}`);
          ext[spec.name] = checkValue(spec, v, `${urn}:${spec.name}`);
        }
        if (Object.keys(ext).length > 0) doc[urn] = ext;
        continue;
      }
      const spec = schema.coreAttribute(key);
      if (!spec) throw badRequest(`No such attribute with the name : ${key}`);
      if (spec.readOnly) continue;
      const checked = checkValue(spec, value, spec.name);
      if (spec.name === 'password') password = checked as string;
      else doc[spec.name] = checked;
    }
    if (kind === 'user' && (typeof doc.userName !== 'string' || !doc.userName.trim())) {
      throw badRequest('Required attribute userName is missing in the SCIM Object.');
    }
    return password === undefined ? { doc } : { doc, password };
  }
}

/** WSO2's default password policy; agents' generated passwords are exempt. */
function checkPasswordPolicy(kind: UserKind, password: string | undefined): void {
  if (kind === 'user' && password !== undefined && !PASSWORD_PATTERN.test(password)) {
    throw badRequest(`The provided password does not match the policy: ${PASSWORD_PATTERN.source}`);
  }
}

/** The ids (column `user_id`) of the users of `kind` the tree selects, with its parameters. */
function treeSql(
  tree: FilterTree,
  kind: UserKind,
  schema: UserSchema,
  relaxed: boolean,
): [string, unknown[]] {
  const all: [string, unknown[]] = ['SELECT id AS user_id FROM users WHERE kind = ?', [kind]];
  const combine = (filters: FilterTree[], operator: string): [string, unknown[]] => {
    const parts = filters.map((f) => treeSql(f, kind, schema, relaxed));
    return [
      parts.map(([sql]) => `SELECT user_id FROM (${sql})`).join(` ${operator} `),
      parts.flatMap(([, params]) => params),
    ];
  };
  switch (tree.op) {
    case 'and':
      return combine(tree.filters, 'INTERSECT');
    case 'or':
      return combine(tree.filters, 'UNION');
    case 'not': {
      // Inside a value filter the index cannot tell entries apart: keep every candidate.
      if (relaxed) return all;
      const [sql, params] = treeSql(tree.filter, kind, schema, relaxed);
      return [`${all[0]} EXCEPT SELECT user_id FROM (${sql})`, [kind, ...params]];
    }
    case '[]':
      return treeSql(tree.filter, kind, schema, true);
    default:
      return comparisonSql(tree, kind, schema, relaxed);
  }
}

const META_COLUMNS: Record<string, string> = {
  'meta.created': 'created_at',
  'meta.lastModified': 'modified_at',
};

function comparisonSql(
  c: Comparison,
  kind: UserKind,
  schema: UserSchema,
  relaxed: boolean,
): [string, unknown[]] {
  const column = META_COLUMNS[c.attribute];
  if (column) {
    const [predicate, values] = valuePredicate(c.op, c.value, column);
    return [`SELECT id AS user_id FROM users WHERE kind = ? AND ${predicate}`, [kind, ...values]];
  }
  const name = c.attribute.toLowerCase();
  const value = c.value.toLowerCase();
  if (c.op === 'ne') {
    if (relaxed) return ['SELECT id AS user_id FROM users WHERE kind = ?', [kind]];
    return [
      `SELECT id AS user_id FROM users WHERE kind = ?
       EXCEPT SELECT user_id FROM user_attrs WHERE kind = ? AND name = ? AND value = ?`,
      [kind, kind, name, value],
    ];
  }
  const [predicate, values] = valuePredicate(c.op, value, 'value');
  // A single-valued attribute has one row per user: no DISTINCT, so the index alone answers.
  const distinct = schema.isMultiValued(c.attribute) ? 'DISTINCT ' : '';
  return [
    `SELECT ${distinct}user_id FROM user_attrs WHERE kind = ? AND name = ? AND ${predicate}`,
    [kind, name, ...values],
  ];
}

function valuePredicate(op: FilterOperator, value: string, column: string): [string, unknown[]] {
  const like = (pattern: string) => pattern.replace(/[\\%_]/g, (ch) => `\\${ch}`);
  switch (op) {
    case 'sw':
      return [`${column} >= ? AND ${column} < ?`, [value, value + MAX_CODE_POINT]];
    case 'co':
      return [`${column} LIKE ? ESCAPE '\\'`, [`%${like(value)}%`]];
    case 'ew':
      return [`${column} LIKE ? ESCAPE '\\'`, [`%${like(value)}`]];
    case 'ge':
      return [`${column} >= ?`, [value]];
    case 'le':
      return [`${column} <= ?`, [value]];
    case 'gt':
      return [`${column} > ?`, [value]];
    case 'lt':
      return [`${column} < ?`, [value]];
    case 'ne':
      return [`${column} <> ?`, [value]];
    case 'pr':
      return ['1 = 1', []];
    default:
      return [`${column} = ?`, [value]];
  }
}

/** A stored user as the filter evaluator sees it (the same values the index holds). */
function userSubject(row: UserRow, schema: UserSchema): FilterSubject {
  const doc = JSON.parse(row.doc) as JsonObject;
  let values: [string, string][] | undefined;
  return {
    values(attribute) {
      if (attribute === 'meta.created') return [row.created_at];
      if (attribute === 'meta.lastModified') return [row.modified_at];
      values ??= indexedValues(doc, schema);
      const key = attribute.toLowerCase();
      return values.filter(([k]) => k === key).map(([, v]) => v);
    },
    entries(attribute) {
      const value = doc[attribute];
      return Array.isArray(value) ? value.filter(isJsonObject) : [];
    },
  };
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const item of Object.values(value)) deepFreeze(item);
  }
  return value;
}

function toRecord(row: UserRow): JsonObject {
  return {
    ...(JSON.parse(row.doc) as JsonObject),
    id: row.id,
    meta: { created: row.created_at, lastModified: row.modified_at, version: row.version },
  };
}

function documentOf(record: JsonObject): JsonObject {
  const { id: _id, meta: _meta, ...doc } = record;
  return doc;
}

/** WSO2 prefixes agent names with the AGENT domain; a name with its own domain is refused. */
function agentUserName(given: unknown): string {
  if (given === undefined || given === null) return `AGENT/${randomUUID()}`;
  const name = String(given);
  if (name.startsWith('AGENT/') && !name.slice(6).includes('/') && name.length > 6) return name;
  if (!name.trim() || name.includes('/')) {
    throw badRequest('Agent username cannot contain domain name or be null.');
  }
  return `AGENT/${name}`;
}

/** An agent has the agent schema's required attributes (WSO2: DisplayName and Owner). */
function assertAgentFields(doc: JsonObject): void {
  const agent = isJsonObject(doc[AGENT_SCHEMA]) ? doc[AGENT_SCHEMA] : {};
  for (const { name } of AGENT_ATTRIBUTES.filter((a) => a.required)) {
    const value = agent[name];
    if (typeof value !== 'string' || !value.trim()) {
      throw badRequest(`Required attribute ${AGENT_SCHEMA}:${name} is missing in the SCIM Object.`);
    }
  }
}

const PASSWORD_CLASSES = [
  'ABCDEFGHJKLMNPQRSTUVWXYZ',
  'abcdefghijkmnpqrstuvwxyz',
  '23456789',
  '!#$%*',
];

/** 16 characters with at least one of each class, like WSO2's generated agent passwords. */
function generatePassword(): string {
  const all = PASSWORD_CLASSES.join('');
  const chars = PASSWORD_CLASSES.map((set) => set[randomInt(set.length)]!);
  while (chars.length < 16) chars.push(all[randomInt(all.length)]!);
  for (let i = chars.length - 1; i > 0; i--) {
    const j = randomInt(i + 1);
    [chars[i], chars[j]] = [chars[j]!, chars[i]!];
  }
  return chars.join('');
}

export const USER_SCHEMAS = [CORE_USER, ENTERPRISE_USER, WSO2_USER, CUSTOM_USER];
export const AGENT_SCHEMAS = [...USER_SCHEMAS, AGENT_SCHEMA];
