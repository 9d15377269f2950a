import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { hashSecret, McpIdentityError, randomToken, verifySecret } from '@mcp-identity/common';
import Database from 'better-sqlite3';

/** An end user of Area A's built-in login, who signs in with an e-mail address and a password. */
export interface Account {
  id: string;
  email: string;
  createdAt: string;
}

export type AccountCheck = { ok: true; account: Account } | { ok: false };

type Awaitable<T> = T | Promise<T>;

/**
 * Where Area A keeps its accounts: SQLite in the data directory (`AccountStore`, the default)
 * or PostgreSQL shared by every instance (`PostgresAccountStore`). Callers await every method.
 */
export interface Accounts {
  count(): Awaitable<number>;
  list(): Awaitable<Account[]>;
  findById(id: string): Awaitable<Account | undefined>;
  add(email: string, password: string): Promise<Account>;
  setPassword(email: string, password: string): Promise<Account>;
  remove(email: string): Awaitable<Account>;
  /** Checks credentials in about the same time whether or not the account exists. */
  verify(email: string, password: string): Promise<AccountCheck>;
  close(): Awaitable<void>;
}

/** A problem with an account request the caller can fix (exit 1 / HTTP 4xx, never a crash). */
export class AccountError extends McpIdentityError {
  constructor(
    message: string,
    readonly code: 'invalid_email' | 'invalid_password' | 'duplicate_email' | 'not_found',
  ) {
    super(message);
  }
}

export const ACCOUNTS_FILE = 'accounts.db';
export const MIN_PASSWORD_LENGTH = 8;
/** scrypt's cost does not depend on the input length, but bodies this long are abuse. */
export const MAX_PASSWORD_LENGTH = 1024;
const MAX_EMAIL_LENGTH = 254;
/**
 * One `@` between non-empty parts without white space or control characters: no address of
 * RFC 5321 / RFC 6531 holds a control character, and PostgreSQL's text cannot hold NUL at all,
 * so input with one is refused here, the same for both stores, before any query.
 */
const EMAIL = /^[^\s@\p{Cc}]+@[^\s@\p{Cc}]+$/u;

/** E-mail addresses are unique regardless of case: stored and looked up lower-cased. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** The normalized form of `email` when an account could have it, else undefined. */
export function accountEmail(email: string): string | undefined {
  const normalized = normalizeEmail(email);
  return normalized.length <= MAX_EMAIL_LENGTH && EMAIL.test(normalized) ? normalized : undefined;
}

/** `accountEmail`, or an `AccountError` (exit 1 / HTTP 400) naming the input. */
export function requireAccountEmail(email: string): string {
  const normalized = accountEmail(email);
  if (normalized === undefined) {
    throw new AccountError(`not an e-mail address: ${JSON.stringify(email)}`, 'invalid_email');
  }
  return normalized;
}

function validPassword(password: string): string {
  if (password.length < MIN_PASSWORD_LENGTH || password.length > MAX_PASSWORD_LENGTH) {
    throw new AccountError(
      `the password must have ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters`,
      'invalid_password',
    );
  }
  return password;
}

/** A password for accounts created without one: 144 random bits, shown once. */
export function generatePassword(): string {
  return randomToken(18);
}

/** The columns of an account, in SQLite and PostgreSQL alike. */
export interface AccountRow {
  id: string;
  email: string;
  password_hash: string;
  created_at: string;
}

export const toAccount = (row: AccountRow): Account => ({
  id: row.id,
  email: row.email,
  createdAt: row.created_at,
});

/** A validated new account and its password hash, ready to insert. */
export async function newAccountRow(email: string, password: string): Promise<AccountRow> {
  const normalized = requireAccountEmail(email);
  return {
    id: randomUUID(),
    email: normalized,
    password_hash: await hashSecret(validPassword(password)),
    created_at: new Date().toISOString(),
  };
}

/** The hash of a new password for an existing account. */
export function hashNewPassword(password: string): Promise<string> {
  return hashSecret(validPassword(password));
}

export function duplicateEmail(email: string): AccountError {
  return new AccountError(`an account with e-mail ${email} already exists`, 'duplicate_email');
}

export function notFound(email: string): AccountError {
  return new AccountError(`no account with e-mail ${email}`, 'not_found');
}

/**
 * Checks a password against the row of its account, or against a throwaway hash when there is
 * none, so a miss costs what a wrong password costs.
 */
export class PasswordChecker {
  #dummyHash: Promise<string> | undefined;

  /**
   * Verifies `password` for the account `email` names, read with `find` only when the e-mail
   * could be an account's: input no account can have never reaches the database, and costs
   * what a wrong password costs.
   */
  async verify(
    email: string,
    password: string,
    find: (normalizedEmail: string) => Awaitable<AccountRow | undefined>,
  ): Promise<AccountCheck> {
    const normalized = accountEmail(email);
    return this.check(normalized === undefined ? undefined : await find(normalized), password);
  }

  async check(row: AccountRow | undefined, password: string): Promise<AccountCheck> {
    if (row === undefined || password.length > MAX_PASSWORD_LENGTH) {
      this.#dummyHash ??= hashSecret(randomToken());
      await verifySecret(password.slice(0, MAX_PASSWORD_LENGTH), await this.#dummyHash);
      return { ok: false };
    }
    return (await verifySecret(password, row.password_hash))
      ? { ok: true, account: toAccount(row) }
      : { ok: false };
  }
}

/**
 * Accounts in SQLite (`<dataDir>/accounts.db`, WAL), passwords as scrypt hashes. Hashing runs
 * off the main thread (libuv pool); the queries are synchronous and tiny.
 */
export class AccountStore implements Accounts {
  readonly #db: Database.Database;
  readonly #passwords = new PasswordChecker();

  private constructor(db: Database.Database) {
    this.#db = db;
  }

  /** Opens (creating when needed) the account database of a data directory. */
  static open(dataDir: string): AccountStore {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const db = new Database(join(dataDir, ACCOUNTS_FILE));
    try {
      db.pragma('journal_mode = WAL');
      db.pragma('busy_timeout = 5000');
      db.exec(`CREATE TABLE IF NOT EXISTS accounts (
        id TEXT PRIMARY KEY,
        email TEXT NOT NULL UNIQUE,
        password_hash TEXT NOT NULL,
        created_at TEXT NOT NULL
      )`);
    } catch (error) {
      db.close();
      throw error;
    }
    return new AccountStore(db);
  }

  count(): number {
    return this.#db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM accounts').get()?.n ?? 0;
  }

  list(): Account[] {
    return this.#db
      .prepare<[], AccountRow>('SELECT * FROM accounts ORDER BY created_at, email')
      .all()
      .map(toAccount);
  }

  findById(id: string): Account | undefined {
    const row = this.#db
      .prepare<[string], AccountRow>('SELECT * FROM accounts WHERE id = ?')
      .get(id);
    return row === undefined ? undefined : toAccount(row);
  }

  async add(email: string, password: string): Promise<Account> {
    const row = await newAccountRow(email, password);
    try {
      this.#db
        .prepare('INSERT INTO accounts (id, email, password_hash, created_at) VALUES (?, ?, ?, ?)')
        .run(row.id, row.email, row.password_hash, row.created_at);
    } catch (error) {
      if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') {
        throw duplicateEmail(row.email);
      }
      throw error;
    }
    return toAccount(row);
  }

  async setPassword(email: string, password: string): Promise<Account> {
    const normalized = requireAccountEmail(email);
    const hash = await hashNewPassword(password);
    const row = this.#db
      .prepare<[string, string], AccountRow>(
        'UPDATE accounts SET password_hash = ? WHERE email = ? RETURNING *',
      )
      .get(hash, normalized);
    if (row === undefined) throw notFound(normalized);
    return toAccount(row);
  }

  remove(email: string): Account {
    const normalized = requireAccountEmail(email);
    const row = this.#row(normalized);
    if (row === undefined) throw notFound(normalized);
    this.#db.prepare('DELETE FROM accounts WHERE id = ?').run(row.id);
    return toAccount(row);
  }

  async verify(email: string, password: string): Promise<AccountCheck> {
    return this.#passwords.verify(email, password, (normalized) => this.#row(normalized));
  }

  close(): void {
    this.#db.close();
  }

  #row(normalizedEmail: string): AccountRow | undefined {
    return this.#db
      .prepare<[string], AccountRow>('SELECT * FROM accounts WHERE email = ?')
      .get(normalizedEmail);
  }
}
