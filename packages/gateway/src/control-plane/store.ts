import path from 'node:path';
import { McpIdentityError, UnavailableError } from '@mcp-identity/common';
import Database from 'better-sqlite3';
import type { ManagementUser } from '../config.js';
import type { McpProxyDefinition } from './definition.js';

export interface StoredProxy {
  id: string;
  definition: McpProxyDefinition;
  createdAt: string;
  updatedAt: string;
  deployedAt: string | null;
}

/** Where proxy definitions persist: SQLite by default, PostgreSQL with `database.url`. */
export interface ProxyStore {
  list(): Promise<StoredProxy[]>;
  get(id: string): Promise<StoredProxy | undefined>;
  insert(proxy: StoredProxy): Promise<void>;
  update(proxy: StoredProxy): Promise<void>;
  delete(id: string): Promise<boolean>;
  /**
   * Calls `listener` whenever another gateway instance may have changed the definitions. Stores
   * that only this process writes have nothing to report.
   */
  watch?(listener: () => void): void;
  close(): Promise<void>;
}

/** Management users kept by the store (when none are configured in the TOML file). */
export interface ManagementUserStore {
  list(): Promise<ManagementUser[]>;
  /** Stores `user` only if there is no user yet; true when this call stored it. */
  addFirst(user: ManagementUser): Promise<boolean>;
}

/** The configuration database cannot be reached: the management API answers 503. */
export class StoreUnavailableError extends UnavailableError {
  override readonly code = 'ERR_STORE_UNAVAILABLE';
  constructor(cause: unknown) {
    super('the configuration database is unavailable', { cause });
  }
}

/** A write collided with a proxy another instance stored at the same time. */
export class ProxyConflictError extends McpIdentityError {
  readonly code = 'ERR_PROXY_CONFLICT';
}

/** A `mcp_proxies` row as both stores read it. */
export interface ProxyRow {
  id: string;
  definition: string;
  created_at: string;
  updated_at: string;
  deployed_at: string | null;
}

export const proxyFromRow = (row: ProxyRow): StoredProxy => ({
  id: row.id,
  definition: JSON.parse(row.definition) as McpProxyDefinition,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  deployedAt: row.deployed_at,
});

/**
 * Proxy definitions in SQLite (WAL), so deployments survive a restart. One process writes it:
 * the gateway, or the primary of `--workers`.
 */
export class SqliteProxyStore implements ProxyStore {
  private readonly db: Database.Database;
  /** Prepared once: each management call runs one of them. */
  private readonly statements: {
    list: Database.Statement<[], ProxyRow>;
    get: Database.Statement<[string], ProxyRow>;
    insert: Database.Statement<[string, string, string, string, string | null]>;
    update: Database.Statement<[string, string, string | null, string]>;
    delete: Database.Statement<[string]>;
  };

  constructor(dataDir: string) {
    this.db = new Database(path.join(dataDir, 'gateway.db'));
    this.db.pragma('journal_mode = WAL');
    this.db.exec(`CREATE TABLE IF NOT EXISTS mcp_proxies (
      id TEXT PRIMARY KEY,
      definition TEXT NOT NULL,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      deployed_at TEXT
    )`);
    this.statements = {
      list: this.db.prepare('SELECT * FROM mcp_proxies ORDER BY created_at, id'),
      get: this.db.prepare('SELECT * FROM mcp_proxies WHERE id = ?'),
      insert: this.db.prepare(
        'INSERT INTO mcp_proxies (id, definition, created_at, updated_at, deployed_at) VALUES (?, ?, ?, ?, ?)',
      ),
      update: this.db.prepare(
        'UPDATE mcp_proxies SET definition = ?, updated_at = ?, deployed_at = ? WHERE id = ?',
      ),
      delete: this.db.prepare('DELETE FROM mcp_proxies WHERE id = ?'),
    };
  }

  async list(): Promise<StoredProxy[]> {
    return this.statements.list.all().map(proxyFromRow);
  }

  async get(id: string): Promise<StoredProxy | undefined> {
    const row = this.statements.get.get(id);
    return row ? proxyFromRow(row) : undefined;
  }

  async insert(proxy: StoredProxy): Promise<void> {
    this.statements.insert.run(
      proxy.id,
      JSON.stringify(proxy.definition),
      proxy.createdAt,
      proxy.updatedAt,
      proxy.deployedAt,
    );
  }

  async update(proxy: StoredProxy): Promise<void> {
    this.statements.update.run(
      JSON.stringify(proxy.definition),
      proxy.updatedAt,
      proxy.deployedAt,
      proxy.id,
    );
  }

  async delete(id: string): Promise<boolean> {
    return this.statements.delete.run(id).changes > 0;
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
