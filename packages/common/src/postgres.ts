import { McpIdentityError } from './errors.js';

/** The part of a `pg` client (one session) that `migrateSchema` uses. */
export interface SqlSession {
  query(text: string, values?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>;
}

/** The part of a `pg` pool that `migrateSchema` uses. */
export interface SqlPool {
  connect(): Promise<SqlSession & { release(): void }>;
}

export interface SchemaMigrations {
  /** Table recording the applied versions, e.g. `arazzo_mcp_schema_version`. */
  versionTable: string;
  /** `pg_advisory_lock` key (a bigint, in decimal) serialising instances that start together. */
  lockKey: string;
  /** Version N is `migrations[N - 1]`. Append; never edit a released entry. */
  migrations: readonly string[];
  /** Named in the error when the database is newer than this program. */
  component: string;
  onMigrated?: (version: number) => void;
}

/** The database was migrated by a newer release than this one: it is not downgraded. */
export class SchemaVersionError extends McpIdentityError {
  readonly code = 'ERR_SCHEMA_VERSION';
}

/**
 * Brings a PostgreSQL schema to the newest version: each missing migration runs in its own
 * transaction and is recorded in the version table, under an advisory lock so that N instances
 * starting at once migrate exactly once. It all runs on one session checked out of `pool`, since
 * the lock is held by the session.
 */
export async function migrateSchema(pool: SqlPool, schema: SchemaMigrations): Promise<void> {
  const session = await pool.connect();
  try {
    await migrateSession(session, schema);
  } finally {
    session.release();
  }
}

async function migrateSession(session: SqlSession, schema: SchemaMigrations): Promise<void> {
  await session.query('SELECT pg_advisory_lock($1)', [schema.lockKey]);
  try {
    await session.query(`CREATE TABLE IF NOT EXISTS ${schema.versionTable} (
      version integer PRIMARY KEY,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const { rows } = await session.query(
      `SELECT coalesce(max(version), 0)::integer AS version FROM ${schema.versionTable}`,
    );
    const applied = Number(rows[0]?.version ?? 0);
    if (applied > schema.migrations.length) {
      throw new SchemaVersionError(
        `the database schema is at version ${applied}, newer than this ${schema.component}'s ${schema.migrations.length}; upgrade the ${schema.component}`,
      );
    }
    for (const [index, migration] of schema.migrations.entries()) {
      const version = index + 1;
      if (version <= applied) continue;
      await session.query('BEGIN');
      try {
        await session.query(migration);
        await session.query(`INSERT INTO ${schema.versionTable} (version) VALUES ($1)`, [version]);
        await session.query('COMMIT');
      } catch (error) {
        await session.query('ROLLBACK');
        throw error;
      }
      schema.onMigrated?.(version);
    }
  } finally {
    await session.query('SELECT pg_advisory_unlock($1)', [schema.lockKey]).catch(() => undefined);
  }
}

/**
 * Whether a `pg` failure means the database is unavailable (HTTP 503) rather than a fault of
 * ours: anything that is not a server error (a refused or dropped connection), or a server error
 * of SQLSTATE class 08 (connection), 53 (resources) or 57 (shutdown, operator intervention).
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const { code, severity } = (error ?? {}) as { code?: unknown; severity?: unknown };
  const serverError = typeof severity === 'string' && typeof code === 'string';
  return !serverError || ['08', '53', '57'].includes(code.slice(0, 2));
}
