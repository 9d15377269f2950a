import {
  InternalError,
  isDatabaseUnavailable,
  type Logger,
  migrateSchema,
  StateUnavailableError,
  UnavailableError,
} from '@mcp-identity/common';
import {
  generatePrivateJwk,
  importSigningKey,
  type SigningAlgorithm,
  type SigningKey,
} from '@mcp-identity/oauth';
import pg from 'pg';
import {
  type Account,
  type AccountCheck,
  type AccountRow,
  type Accounts,
  duplicateEmail,
  hashNewPassword,
  newAccountRow,
  notFound,
  PasswordChecker,
  requireAccountEmail,
  toAccount,
} from './accounts.js';

/**
 * Schema versions of Area A's tables, recorded in `arazzo_mcp_schema_version`. Append; never
 * edit a released entry.
 */
const MIGRATIONS = [
  `CREATE TABLE arazzo_mcp_accounts (
     id text PRIMARY KEY,
     email text NOT NULL UNIQUE,
     password_hash text NOT NULL,
     created_at text NOT NULL
   );
   CREATE TABLE arazzo_mcp_signing_key (
     singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
     alg text NOT NULL,
     private_jwk text NOT NULL
   );`,
];
/** `pg_advisory_lock` key of Area A's migrations (distinct from the gateway's). */
const MIGRATION_LOCK = '4152617122';
/** `pg_advisory_xact_lock` key serialising the creation of the first account. */
const FIRST_ACCOUNT_LOCK = '4152617123';

/** Host and database of a connection URL, never its credentials. */
const whereIs = (url: string) =>
  URL.canParse(url) ? `${new URL(url).host}${new URL(url).pathname}` : 'an unparseable URL';

/**
 * Area A's accounts and JWT signing key in PostgreSQL, shared by every instance: an account
 * registered at one instance signs in at any other, and every instance signs with, and
 * trusts tokens of, the same key. The schema is created and migrated on `open`.
 */
export class PostgresAccountStore implements Accounts {
  readonly #passwords = new PasswordChecker();

  private constructor(private readonly pool: pg.Pool) {}

  static async open(url: string, logger?: Logger): Promise<PostgresAccountStore> {
    const pool = new pg.Pool({
      connectionString: url,
      max: 4,
      connectionTimeoutMillis: 5_000,
      idleTimeoutMillis: 30_000,
    });
    // An idle connection dropped by a database restart must not end the process.
    pool.on('error', () => undefined);
    try {
      await migrateSchema(pool, {
        versionTable: 'arazzo_mcp_schema_version',
        lockKey: MIGRATION_LOCK,
        migrations: MIGRATIONS,
        component: 'arazzo-mcp',
        onMigrated: (version) => logger?.info({ version }, 'account database schema migrated'),
      });
    } catch (error) {
      await pool.end();
      throw new UnavailableError(`cannot open the account database at ${whereIs(url)}`, {
        cause: error,
      });
    }
    return new PostgresAccountStore(pool);
  }

  /** Every statement; an unreachable database becomes `StateUnavailableError` (HTTP 503). */
  private query<R extends pg.QueryResultRow>(text: string, values: unknown[] = []) {
    return this.pool.query<R>(text, values).catch((error: unknown) => {
      throw unavailableOr(error);
    });
  }

  private async row(normalizedEmail: string): Promise<AccountRow | undefined> {
    const { rows } = await this.query<AccountRow>(
      'SELECT * FROM arazzo_mcp_accounts WHERE email = $1',
      [normalizedEmail],
    );
    return rows[0];
  }

  async count(): Promise<number> {
    const { rows } = await this.query<{ n: number }>(
      'SELECT count(*)::integer AS n FROM arazzo_mcp_accounts',
    );
    return rows[0]?.n ?? 0;
  }

  async list(): Promise<Account[]> {
    const { rows } = await this.query<AccountRow>(
      'SELECT * FROM arazzo_mcp_accounts ORDER BY created_at, email',
    );
    return rows.map(toAccount);
  }

  async findById(id: string): Promise<Account | undefined> {
    const { rows } = await this.query<AccountRow>(
      'SELECT * FROM arazzo_mcp_accounts WHERE id = $1',
      [id],
    );
    return rows[0] === undefined ? undefined : toAccount(rows[0]);
  }

  async add(email: string, password: string): Promise<Account> {
    const row = await newAccountRow(email, password);
    const result = await this.query(
      `INSERT INTO arazzo_mcp_accounts (id, email, password_hash, created_at)
       VALUES ($1, $2, $3, $4) ON CONFLICT (email) DO NOTHING`,
      [row.id, row.email, row.password_hash, row.created_at],
    );
    if (result.rowCount === 0) throw duplicateEmail(row.email);
    return toAccount(row);
  }

  /**
   * Creates the account only while there is none (undefined when there was already one).
   * Instances starting together race here: an `INSERT … WHERE NOT EXISTS` alone lets each see
   * the empty table in its own snapshot, so the check runs after a transaction-scoped advisory
   * lock, in a statement of its own (under READ COMMITTED it then sees what the lock's previous
   * holder committed).
   */
  async addFirst(email: string, password: string): Promise<Account | undefined> {
    const row = await newAccountRow(email, password);
    const session = await this.pool.connect().catch((error: unknown) => {
      throw unavailableOr(error);
    });
    try {
      await session.query('BEGIN');
      await session.query('SELECT pg_advisory_xact_lock($1)', [FIRST_ACCOUNT_LOCK]);
      const result = await session.query(
        `INSERT INTO arazzo_mcp_accounts (id, email, password_hash, created_at)
         SELECT $1, $2, $3, $4 WHERE NOT EXISTS (SELECT 1 FROM arazzo_mcp_accounts)`,
        [row.id, row.email, row.password_hash, row.created_at],
      );
      await session.query('COMMIT');
      return result.rowCount === 1 ? toAccount(row) : undefined;
    } catch (error) {
      await session.query('ROLLBACK').catch(() => undefined);
      throw unavailableOr(error);
    } finally {
      session.release();
    }
  }

  async setPassword(email: string, password: string): Promise<Account> {
    const normalized = requireAccountEmail(email);
    const hash = await hashNewPassword(password);
    const { rows } = await this.query<AccountRow>(
      'UPDATE arazzo_mcp_accounts SET password_hash = $1 WHERE email = $2 RETURNING *',
      [hash, normalized],
    );
    if (rows[0] === undefined) throw notFound(normalized);
    return toAccount(rows[0]);
  }

  async remove(email: string): Promise<Account> {
    const normalized = requireAccountEmail(email);
    const { rows } = await this.query<AccountRow>(
      'DELETE FROM arazzo_mcp_accounts WHERE email = $1 RETURNING *',
      [normalized],
    );
    if (rows[0] === undefined) throw notFound(normalized);
    return toAccount(rows[0]);
  }

  async verify(email: string, password: string): Promise<AccountCheck> {
    return this.#passwords.verify(email, password, (normalized) => this.row(normalized));
  }

  /**
   * The signing key every instance shares, created by whichever instance asks first (the
   * others read the one it stored).
   */
  async signingKey(alg: SigningAlgorithm = 'ES256'): Promise<SigningKey> {
    const candidate = await generatePrivateJwk(alg);
    await this.query(
      `INSERT INTO arazzo_mcp_signing_key (alg, private_jwk) VALUES ($1, $2)
       ON CONFLICT (singleton) DO NOTHING`,
      [alg, JSON.stringify(candidate)],
    );
    const { rows } = await this.query<{ alg: SigningAlgorithm; private_jwk: string }>(
      'SELECT alg, private_jwk FROM arazzo_mcp_signing_key',
    );
    const stored = rows[0];
    if (stored === undefined) throw new InternalError('the signing key was not stored');
    return importSigningKey(stored.alg, JSON.parse(stored.private_jwk));
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/** A failure of an unreachable database as `StateUnavailableError` (HTTP 503); others unchanged. */
function unavailableOr(error: unknown): unknown {
  return isDatabaseUnavailable(error) ? new StateUnavailableError(error) : error;
}
