import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';

export type Db = Database.Database;

// One schema, applied idempotently; `user_attrs` holds the lower-cased value of every
// filterable attribute so that filters, counts and pages are answered from one covering index.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS signing_keys (
  kid TEXT PRIMARY KEY,
  private_jwk TEXT NOT NULL,
  public_jwk TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  retired_at INTEGER
);
CREATE TABLE IF NOT EXISTS apps (
  client_id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  secret_hash TEXT,
  grant_types TEXT NOT NULL,
  scopes TEXT NOT NULL,
  redirect_uris TEXT NOT NULL,
  dynamic INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS users (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  user_name TEXT NOT NULL,
  user_name_lc TEXT NOT NULL UNIQUE,
  password_hash TEXT,
  doc TEXT NOT NULL,
  created_at TEXT NOT NULL,
  modified_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS users_kind_id ON users (kind, id);
CREATE TABLE IF NOT EXISTS user_attrs (
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  value TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS user_attrs_lookup ON user_attrs (kind, name, value, user_id);
CREATE INDEX IF NOT EXISTS user_attrs_user ON user_attrs (user_id);
CREATE TABLE IF NOT EXISTS groups_ (
  id TEXT PRIMARY KEY,
  display_name TEXT NOT NULL,
  display_name_lc TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL,
  modified_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS group_members (
  group_id TEXT NOT NULL REFERENCES groups_(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  PRIMARY KEY (group_id, user_id)
);
CREATE INDEX IF NOT EXISTS group_members_user ON group_members (user_id);
CREATE TABLE IF NOT EXISTS roles (
  id TEXT PRIMARY KEY,
  display_name TEXT NOT NULL,
  audience_type TEXT NOT NULL,
  audience_value TEXT NOT NULL,
  created_at TEXT NOT NULL,
  modified_at TEXT NOT NULL,
  UNIQUE (display_name, audience_type, audience_value)
);
CREATE TABLE IF NOT EXISTS role_users (
  role_id TEXT NOT NULL REFERENCES roles(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  PRIMARY KEY (role_id, user_id)
);
CREATE TABLE IF NOT EXISTS role_groups (
  role_id TEXT NOT NULL REFERENCES roles(id) ON DELETE CASCADE,
  group_id TEXT NOT NULL REFERENCES groups_(id) ON DELETE CASCADE,
  PRIMARY KEY (role_id, group_id)
);
CREATE TABLE IF NOT EXISTS role_permissions (
  role_id TEXT NOT NULL REFERENCES roles(id) ON DELETE CASCADE,
  scope TEXT NOT NULL,
  PRIMARY KEY (role_id, scope)
);
CREATE TABLE IF NOT EXISTS custom_attributes (
  name TEXT PRIMARY KEY,
  type TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS auth_codes (
  code_hash TEXT PRIMARY KEY,
  client_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  redirect_uri TEXT NOT NULL,
  code_challenge TEXT NOT NULL,
  scope TEXT NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS refresh_tokens (
  token_hash TEXT PRIMARY KEY,
  client_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  scope TEXT NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS revoked_tokens (
  jti TEXT PRIMARY KEY,
  expires_at INTEGER NOT NULL
);
`;

/** Opens (creating if needed) the IdP database in `dataDir`, or in memory for `':memory:'`. */
export function openDatabase(dataDir: string): Db {
  let file = ':memory:';
  if (dataDir !== ':memory:') {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    file = join(dataDir, 'idp.sqlite');
  }
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  // FULL: a write acknowledged to a client is on disk even if the process is killed
  // (or the machine loses power) right after the response.
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  db.exec(SCHEMA);
  addMissingColumns(db);
  return db;
}

/** Columns added after the first release: databases created before get them on open. */
const ADDED_COLUMNS = [{ table: 'groups_', column: 'external_id', type: 'TEXT' }];

function addMissingColumns(db: Db): void {
  for (const { table, column, type } of ADDED_COLUMNS) {
    const columns = db.pragma(`table_info(${table})`) as { name: string }[];
    if (!columns.some((c) => c.name === column)) {
      db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${type}`);
    }
  }
}

const STATEMENT_CACHE_SIZE = 256;
const statementCaches = new WeakMap<Db, Map<string, Database.Statement>>();

/**
 * A prepared statement for `sql`, reused across calls: preparing costs more than running the
 * small lookups of a SCIM read. Bounded, since filter-built SQL varies with the filter's shape.
 */
export function statement(db: Db, sql: string): Database.Statement {
  let cache = statementCaches.get(db);
  if (!cache) {
    cache = new Map();
    statementCaches.set(db, cache);
  }
  let prepared = cache.get(sql);
  if (!prepared) {
    prepared = db.prepare(sql);
    if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
    cache.set(sql, prepared);
  }
  return prepared;
}

/** Runs `fn` in an IMMEDIATE transaction, so read-modify-write sequences are serialised. */
export function inTransaction<T>(db: Db, fn: () => T): T {
  return db.transaction(fn).immediate();
}
