import { existsSync } from 'node:fs';
import path from 'node:path';
import { type Logger, NotFoundError } from '@mcp-identity/common';
import { adminFileUsers } from './management/users.js';
import { ProxyConflictError, SqliteProxyStore } from './store.js';
import { PostgresStore } from './store-postgres.js';

export interface MigrationReport {
  copied: string[];
  /** Already in PostgreSQL, or colliding with a proxy there (same context or name): not copied. */
  skipped: string[];
  /** The generated admin of the data directory: copied, or PostgreSQL already had users. */
  admin: 'copied' | 'kept' | 'none';
}

/**
 * Copies a gateway's SQLite data (proxy definitions with their timestamps, and the generated
 * admin) into PostgreSQL. Safe to run again: what is already there is kept.
 */
export async function migrateToPostgres(
  dataDir: string,
  databaseUrl: string,
  logger: Logger,
): Promise<MigrationReport> {
  if (!existsSync(path.join(dataDir, 'gateway.db'))) {
    throw new NotFoundError(`no gateway.db in ${dataDir}: nothing to migrate`);
  }
  const source = new SqliteProxyStore(dataDir);
  try {
    const target = await PostgresStore.open(databaseUrl, logger);
    try {
      const report: MigrationReport = { copied: [], skipped: [], admin: 'none' };
      for (const proxy of await source.list()) {
        try {
          await target.insert(proxy);
          report.copied.push(proxy.id);
        } catch (error) {
          if (!(error instanceof ProxyConflictError)) throw error;
          report.skipped.push(proxy.id);
        }
      }
      const [admin] = await adminFileUsers(dataDir).list();
      if (admin) report.admin = (await target.users.addFirst(admin)) ? 'copied' : 'kept';
      return report;
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}
