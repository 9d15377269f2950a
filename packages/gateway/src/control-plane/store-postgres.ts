import { setTimeout as delay } from 'node:timers/promises';
import {
  isDatabaseUnavailable,
  type Logger,
  migrateSchema,
  UnavailableError,
} from '@mcp-identity/common';
import pg from 'pg';
import {
  type ManagementUserStore,
  ProxyConflictError,
  type ProxyRow,
  type ProxyStore,
  proxyFromRow,
  type StoredProxy,
  StoreUnavailableError,
} from './store.js';

/** Channel of the notifications the `mcp_proxies` trigger sends on every change. */
const CHANNEL = 'mcp_gateway_proxies';
/** Serialises schema migrations of instances that start together (`pg_advisory_lock` key). */
const MIGRATION_LOCK = '7163747015023';

/** Schema versions for `migrateSchema`, recorded in `mcp_gateway_schema_version`. Append only. */
const MIGRATIONS = [
  `CREATE TABLE mcp_proxies (
     id text PRIMARY KEY,
     context text NOT NULL CONSTRAINT mcp_proxies_context_key UNIQUE,
     display_name text NOT NULL,
     version text NOT NULL,
     definition text NOT NULL,
     created_at text NOT NULL,
     updated_at text NOT NULL,
     deployed_at text,
     CONSTRAINT mcp_proxies_display_name_version_key UNIQUE (display_name, version)
   );
   CREATE TABLE management_users (
     username text PRIMARY KEY,
     password_hash text NOT NULL,
     roles text[] NOT NULL
   );
   CREATE FUNCTION mcp_gateway_proxies_changed() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     IF TG_OP = 'DELETE' THEN
       PERFORM pg_notify('${CHANNEL}', OLD.id);
     ELSE
       PERFORM pg_notify('${CHANNEL}', NEW.id);
     END IF;
     RETURN NULL;
   END $$;
   CREATE TRIGGER mcp_proxies_changed AFTER INSERT OR UPDATE OR DELETE ON mcp_proxies
     FOR EACH ROW EXECUTE FUNCTION mcp_gateway_proxies_changed();`,
];

const CONFLICTS: Record<string, string> = {
  mcp_proxies_pkey: 'an MCP proxy with this handle was stored at the same time',
  mcp_proxies_context_key: 'an MCP proxy with this context was stored at the same time',
  mcp_proxies_display_name_version_key:
    'an MCP proxy with this displayName and version was stored at the same time',
};

/** `host:port/database` of a connection URL, never its credentials. */
function describeDatabase(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || 5432}${parsed.pathname}`;
  } catch {
    return '(unparseable URL)';
  }
}

/** A unique-key clash is another instance's concurrent write; see `isDatabaseUnavailable` for 503s. */
function translate(error: unknown): unknown {
  if (error instanceof pg.DatabaseError && error.code === '23505') {
    return new ProxyConflictError(
      CONFLICTS[error.constraint ?? ''] ?? 'conflicts with an MCP proxy stored at the same time',
    );
  }
  return isDatabaseUnavailable(error) ? new StoreUnavailableError(error) : error;
}

const COLUMNS = 'id, definition, created_at, updated_at, deployed_at';

/**
 * Proxy definitions and management users in PostgreSQL, shared by every gateway instance. A
 * trigger announces each change with NOTIFY; `watch` LISTENs on a dedicated connection that is
 * re-established (and reported as a change, to heal what was missed) after it drops.
 */
export class PostgresStore implements ProxyStore {
  /** Management users, shared by every instance like the proxies. */
  readonly users: ManagementUserStore = {
    list: async () => {
      const { rows } = await this.query<{
        username: string;
        password_hash: string;
        roles: string[];
      }>('SELECT username, password_hash, roles FROM management_users ORDER BY username');
      return rows.map((row) => ({
        username: row.username,
        passwordHash: row.password_hash,
        roles: row.roles,
      }));
    },
    addFirst: async (user) => {
      const result = await this.query(
        `INSERT INTO management_users (username, password_hash, roles)
         SELECT $1, $2, $3 WHERE NOT EXISTS (SELECT 1 FROM management_users)
         ON CONFLICT DO NOTHING`,
        [user.username, user.passwordHash, user.roles],
      );
      return result.rowCount === 1;
    },
  };
  private readonly listeners: Array<() => void> = [];
  private readonly stopping = new AbortController();
  private listenLoop: Promise<void> | undefined;
  private notifications: pg.Client | undefined;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly connection: pg.ClientConfig,
    private readonly logger: Logger,
  ) {}

  /** Connects and brings the schema to the current version. */
  static async open(url: string, logger: Logger): Promise<PostgresStore> {
    const connection: pg.ClientConfig = {
      connectionString: url,
      application_name: 'mcp-identity-gateway',
      connectionTimeoutMillis: 2_000,
      query_timeout: 5_000,
      keepAlive: true,
    };
    const pool = new pg.Pool({ ...connection, max: 4, idleTimeoutMillis: 30_000 });
    // An idle connection that the server closes must not crash the process.
    pool.on('error', (error) => logger.warn({ err: error.message }, 'PostgreSQL connection lost'));
    const store = new PostgresStore(pool, connection, logger);
    try {
      await store.migrate();
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw new UnavailableError(
        `cannot use the PostgreSQL database ${describeDatabase(url)}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    return store;
  }

  private async migrate(): Promise<void> {
    await migrateSchema(this.pool, {
      versionTable: 'mcp_gateway_schema_version',
      lockKey: MIGRATION_LOCK,
      migrations: MIGRATIONS,
      component: 'gateway',
      onMigrated: (version) => this.logger.info({ version }, 'gateway database schema migrated'),
    });
  }

  private async query<R extends pg.QueryResultRow>(
    text: string,
    values: unknown[] = [],
  ): Promise<pg.QueryResult<R>> {
    try {
      return await this.pool.query<R>(text, values);
    } catch (error) {
      throw translate(error);
    }
  }

  async list(): Promise<StoredProxy[]> {
    const { rows } = await this.query<ProxyRow>(
      `SELECT ${COLUMNS} FROM mcp_proxies ORDER BY created_at, id`,
    );
    return rows.map(proxyFromRow);
  }

  async get(id: string): Promise<StoredProxy | undefined> {
    const { rows } = await this.query<ProxyRow>(
      `SELECT ${COLUMNS} FROM mcp_proxies WHERE id = $1`,
      [id],
    );
    return rows[0] ? proxyFromRow(rows[0]) : undefined;
  }

  async insert(proxy: StoredProxy): Promise<void> {
    const { spec } = proxy.definition;
    await this.query(
      `INSERT INTO mcp_proxies (id, context, display_name, version, definition, created_at, updated_at, deployed_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        proxy.id,
        spec.context,
        spec.displayName,
        spec.version,
        JSON.stringify(proxy.definition),
        proxy.createdAt,
        proxy.updatedAt,
        proxy.deployedAt,
      ],
    );
  }

  async update(proxy: StoredProxy): Promise<void> {
    const { spec } = proxy.definition;
    await this.query(
      `UPDATE mcp_proxies SET context = $2, display_name = $3, version = $4, definition = $5,
         updated_at = $6, deployed_at = $7 WHERE id = $1`,
      [
        proxy.id,
        spec.context,
        spec.displayName,
        spec.version,
        JSON.stringify(proxy.definition),
        proxy.updatedAt,
        proxy.deployedAt,
      ],
    );
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.query('DELETE FROM mcp_proxies WHERE id = $1', [id]);
    return (result.rowCount ?? 0) > 0;
  }

  watch(listener: () => void): void {
    this.listeners.push(listener);
    this.listenLoop ??= this.listen();
  }

  private changed(): void {
    for (const listener of this.listeners) listener();
  }

  private async listen(): Promise<void> {
    const { signal } = this.stopping;
    let lost = false;
    let backoffMs = 250;
    while (!signal.aborted) {
      const client = new pg.Client(this.connection);
      const ended = new Promise<unknown>((resolve) => {
        client.on('error', resolve);
        client.on('end', () => resolve(new UnavailableError('connection ended')));
      });
      try {
        await client.connect();
        await client.query(`LISTEN ${CHANNEL}`);
        this.notifications = client;
        client.on('notification', () => this.changed());
        backoffMs = 250;
        if (lost) {
          lost = false;
          this.logger.info('PostgreSQL change notifications resumed');
          this.changed();
        }
        const reason = await ended;
        if (!signal.aborted) throw reason;
      } catch (error) {
        if (signal.aborted) break;
        if (!lost) {
          lost = true;
          this.logger.warn(
            { err: (error as Error)?.message },
            'PostgreSQL change notifications interrupted; reconnecting',
          );
        }
      } finally {
        this.notifications = undefined;
        await client.end().catch(() => undefined);
      }
      await delay(backoffMs, undefined, { signal }).catch(() => undefined);
      backoffMs = Math.min(backoffMs * 2, 5_000);
    }
  }

  async close(): Promise<void> {
    this.stopping.abort();
    await this.notifications?.end().catch(() => undefined);
    await this.listenLoop;
    await this.pool.end();
  }
}
