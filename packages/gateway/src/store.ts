import path from 'node:path';
import Database from 'better-sqlite3';
import type { McpProxyDefinition } from './definition.js';

export interface StoredProxy {
  id: string;
  definition: McpProxyDefinition;
  createdAt: string;
  updatedAt: string;
  deployedAt: string | null;
}

interface Row {
  id: string;
  definition: string;
  created_at: string;
  updated_at: string;
  deployed_at: string | null;
}

const fromRow = (row: Row): StoredProxy => ({
  id: row.id,
  definition: JSON.parse(row.definition) as McpProxyDefinition,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  deployedAt: row.deployed_at,
});

/** Proxy definitions in SQLite (WAL), so deployments survive a restart. */
export class ProxyStore {
  private readonly db: Database.Database;

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
  }

  list(): StoredProxy[] {
    const rows = this.db
      .prepare('SELECT * FROM mcp_proxies ORDER BY created_at, id')
      .all() as Row[];
    return rows.map(fromRow);
  }

  get(id: string): StoredProxy | undefined {
    const row = this.db.prepare('SELECT * FROM mcp_proxies WHERE id = ?').get(id) as
      | Row
      | undefined;
    return row ? fromRow(row) : undefined;
  }

  insert(proxy: StoredProxy): void {
    this.db
      .prepare(
        'INSERT INTO mcp_proxies (id, definition, created_at, updated_at, deployed_at) VALUES (?, ?, ?, ?, ?)',
      )
      .run(
        proxy.id,
        JSON.stringify(proxy.definition),
        proxy.createdAt,
        proxy.updatedAt,
        proxy.deployedAt,
      );
  }

  update(proxy: StoredProxy): void {
    this.db
      .prepare(
        'UPDATE mcp_proxies SET definition = ?, updated_at = ?, deployed_at = ? WHERE id = ?',
      )
      .run(JSON.stringify(proxy.definition), proxy.updatedAt, proxy.deployedAt, proxy.id);
  }

  delete(id: string): boolean {
    return this.db.prepare('DELETE FROM mcp_proxies WHERE id = ?').run(id).changes > 0;
  }

  close(): void {
    this.db.close();
  }
}
