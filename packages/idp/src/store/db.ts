import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { addBounded, NotFoundError } from '@mcp-identity/common';
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
CREATE TABLE IF NOT EXISTS family_access_tokens (
  jti TEXT PRIMARY KEY,
  family_id TEXT NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS family_access_tokens_family ON family_access_tokens (family_id);
CREATE TABLE IF NOT EXISTS api_resources (
  identifier TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  scopes TEXT NOT NULL,
  dynamic_clients INTEGER NOT NULL,
  applications TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS login_transactions (
  token_hash TEXT PRIMARY KEY,
  params TEXT NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS login_transactions_expiry ON login_transactions (expires_at);
`;

/**
 * Columns added after the first release, as (table, column, definition, backfill). Rows that
 * predate a grant family are each their own family.
 */
const ADDED_COLUMNS: readonly [string, string, string, string?][] = [
  ['auth_codes', 'grant_id', 'TEXT', 'UPDATE auth_codes SET grant_id = code_hash'],
  ['auth_codes', 'redeemed', 'INTEGER NOT NULL DEFAULT 0'],
  ['refresh_tokens', 'family_id', 'TEXT', 'UPDATE refresh_tokens SET family_id = token_hash'],
  ['refresh_tokens', 'used', 'INTEGER NOT NULL DEFAULT 0'],
  ['auth_codes', 'resource', 'TEXT'],
  ['refresh_tokens', 'resource', 'TEXT'],
  ['groups_', 'external_id', 'TEXT'],
  // Dynamic clients: the network that registered them and their first token request. A client
  // that left a refresh token or a redeemed code was used before this was recorded.
  ['apps', 'registered_from', 'TEXT'],
  [
    'apps',
    'used_at',
    'INTEGER',
    `UPDATE apps SET used_at = created_at WHERE dynamic = 1 AND (
       client_id IN (SELECT client_id FROM refresh_tokens)
       OR client_id IN (SELECT client_id FROM auth_codes WHERE redeemed = 1))`,
  ],
  ['login_transactions', 'network', "TEXT NOT NULL DEFAULT ''"],
  // RFC 8693: what an application holding the token-exchange grant may exchange (JSON).
  ['apps', 'token_exchange', 'TEXT'],
  ['login_transactions', 'client_id', "TEXT NOT NULL DEFAULT ''"],
  // SCIM resource versions (RFC 7644 §3.14 ETags): rows that predate them start at version 1.
  ['users', 'version', 'INTEGER NOT NULL DEFAULT 1'],
  ['groups_', 'version', 'INTEGER NOT NULL DEFAULT 1'],
];

// Indexes on added columns, and triggers: a deleted or disabled user keeps no refresh token or
// pending code, whichever path (SCIM, Bulk, /Me, the CLI) removed or disabled them.
const TRIGGERS = `
CREATE INDEX IF NOT EXISTS refresh_tokens_family ON refresh_tokens (family_id);
CREATE INDEX IF NOT EXISTS refresh_tokens_user ON refresh_tokens (user_id);
CREATE INDEX IF NOT EXISTS apps_unused_by_network ON apps (registered_from, created_at)
  WHERE dynamic = 1 AND used_at IS NULL;
CREATE INDEX IF NOT EXISTS apps_unused_by_age ON apps (created_at)
  WHERE dynamic = 1 AND used_at IS NULL;
-- A user's representation lists its groups and roles, a group's its members: a membership
-- change, or a group's rename, is a new version of the users and groups concerned (RFC 7644 §3.14).
CREATE TRIGGER IF NOT EXISTS role_users_added_version AFTER INSERT ON role_users BEGIN
  UPDATE users SET version = version + 1 WHERE id = NEW.user_id;
END;
CREATE TRIGGER IF NOT EXISTS role_users_removed_version AFTER DELETE ON role_users BEGIN
  UPDATE users SET version = version + 1 WHERE id = OLD.user_id;
END;
CREATE TRIGGER IF NOT EXISTS group_members_added_version AFTER INSERT ON group_members BEGIN
  UPDATE users SET version = version + 1 WHERE id = NEW.user_id;
  UPDATE groups_ SET version = version + 1 WHERE id = NEW.group_id;
END;
CREATE TRIGGER IF NOT EXISTS group_members_removed_version AFTER DELETE ON group_members BEGIN
  UPDATE users SET version = version + 1 WHERE id = OLD.user_id;
  UPDATE groups_ SET version = version + 1 WHERE id = OLD.group_id;
END;
CREATE TRIGGER IF NOT EXISTS groups_renamed_version AFTER UPDATE OF display_name ON groups_
WHEN NEW.display_name <> OLD.display_name BEGIN
  UPDATE users SET version = version + 1
    WHERE id IN (SELECT user_id FROM group_members WHERE group_id = NEW.id);
END;
CREATE TRIGGER IF NOT EXISTS users_deleted_revoke AFTER DELETE ON users BEGIN
  DELETE FROM refresh_tokens WHERE user_id = OLD.id;
  DELETE FROM auth_codes WHERE user_id = OLD.id;
END;
CREATE TRIGGER IF NOT EXISTS users_disabled_revoke AFTER UPDATE OF doc ON users
WHEN json_extract(NEW.doc, '$.active') = 0 BEGIN
  DELETE FROM refresh_tokens WHERE user_id = NEW.id;
  DELETE FROM auth_codes WHERE user_id = NEW.id;
END;
`;

export const DATABASE_FILE = 'idp.sqlite';

/** Raised when a command that needs an existing IdP is pointed at a directory without one. */
export class NoIdpError extends NotFoundError {
  override readonly code = 'ERR_NO_IDP';
  constructor(readonly dataDir: string) {
    super(
      `${dataDir} holds no IdP (no ${DATABASE_FILE}): check --data-dir, or run "mcp-identity-idp serve" there once`,
    );
  }
}

/**
 * Opens the IdP database in `dataDir` (in memory for `':memory:'`). With `create: false` the
 * database must already exist: nothing is created, and a missing one is a `NoIdpError`.
 */
export function openDatabase(dataDir: string, options: { create?: boolean } = {}): Db {
  let file = ':memory:';
  if (dataDir !== ':memory:') {
    file = join(dataDir, DATABASE_FILE);
    if (options.create === false) {
      if (!existsSync(file)) throw new NoIdpError(dataDir);
    } else {
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    }
  }
  const db = new Database(file, { fileMustExist: options.create === false });
  db.pragma('journal_mode = WAL');
  // FULL: a write acknowledged to a client is on disk even if the process is killed
  // (or the machine loses power) right after the response.
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  db.exec(SCHEMA);
  for (const [table, column, definition, backfill] of ADDED_COLUMNS) {
    const columns = db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[];
    if (columns.some((c) => c.name === column)) continue;
    db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${definition}`);
    if (backfill) db.exec(backfill);
  }
  db.exec(TRIGGERS);
  return db;
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
    addBounded(cache, sql, prepared, STATEMENT_CACHE_SIZE);
  }
  return prepared;
}

/** Runs `fn` in an IMMEDIATE transaction, so read-modify-write sequences are serialised. */
export function inTransaction<T>(db: Db, fn: () => T): T {
  return db.transaction(fn).immediate();
}
