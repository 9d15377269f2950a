import {
  AccountError,
  PostgresAccountStore,
  parseCommandLine,
  runCli,
} from '@mcp-identity/arazzo-mcp';
import { ConfigError, StateUnavailableError } from '@mcp-identity/common';
import {
  describeRequiring,
  postgresMissing,
  startPostgres,
  type TestPostgres,
} from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

describe('--database-url', () => {
  const serve = (...args: string[]) =>
    parseCommandLine(['serve', '--arazzo', 'w.arazzo.yaml', ...args], {});

  it('takes a PostgreSQL URL for serve --auth builtin and accounts, from the flag or ARAZZO_MCP_DATABASE_URL', () => {
    expect(
      serve('--auth', 'builtin', '--database-url', 'postgres://db.internal/area_a'),
    ).toMatchObject({ options: { databaseUrl: 'postgres://db.internal/area_a' } });
    expect(
      parseCommandLine(['accounts', 'list'], { ARAZZO_MCP_DATABASE_URL: 'postgresql://db/a' }),
    ).toMatchObject({ options: { databaseUrl: 'postgresql://db/a' } });
  });

  it('refuses another scheme, and a database without --auth builtin', () => {
    expect(() => serve('--auth', 'builtin', '--database-url', 'mysql://db/a')).toThrow(ConfigError);
    expect(() => serve('--database-url', 'postgres://db/a')).toThrow(/needs --auth builtin/);
  });
});

describeRequiring('PostgresAccountStore', postgresMissing(), () => {
  let postgres: TestPostgres;
  let url: string;
  const stores: PostgresAccountStore[] = [];
  const open = async () => {
    const store = await PostgresAccountStore.open(url);
    stores.push(store);
    return store;
  };

  beforeAll(async () => {
    postgres = await startPostgres();
    url = postgres.createDatabase('area_a_accounts');
  });
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    await postgres?.close();
  });

  it('creates the schema once when instances start together, and opens it again', async () => {
    const [first, second, third] = await Promise.all([open(), open(), open()]);
    expect(await first?.count()).toBe(0);
    expect(await second?.count()).toBe(0);
    expect(await third?.count()).toBe(0);
    expect(await (await open()).count()).toBe(0);
  });

  it('creates exactly one first account between instances starting on an empty database', async () => {
    const [a, b] = [await open(), await open()];
    const created = await Promise.all([
      a.addFirst('admin@example.com', 'first-password-a'),
      b.addFirst('other@example.com', 'first-password-b'),
    ]);
    expect(created.filter((account) => account !== undefined)).toHaveLength(1);
    expect(await a.count()).toBe(1);
  });

  it('shares accounts: added at one instance, verified and changed at another', async () => {
    const [a, b] = [await open(), await open()];
    const account = await a.add('Alice@Example.com', 'correct horse');
    expect(account.email).toBe('alice@example.com');
    await expect(b.add('alice@example.com', 'another password')).rejects.toMatchObject({
      code: 'duplicate_email',
    });
    expect(await b.verify('alice@example.com', 'correct horse')).toEqual({ ok: true, account });
    expect(await b.verify('alice@example.com', 'wrong horse')).toEqual({ ok: false });
    expect(await b.verify('nobody@example.com', 'correct horse')).toEqual({ ok: false });
    await b.setPassword('alice@example.com', 'battery staple');
    expect((await a.verify('alice@example.com', 'battery staple')).ok).toBe(true);
    expect(await a.findById(account.id)).toEqual(account);
    expect((await a.list()).map((entry) => entry.email)).toContain('alice@example.com');
    await b.remove('alice@example.com');
    expect(await a.findById(account.id)).toBeUndefined();
    await expect(a.remove('alice@example.com')).rejects.toBeInstanceOf(AccountError);
  });

  it('gives every instance the same signing key, even when they ask at once', async () => {
    const [a, b] = [await open(), await open()];
    const [first, second] = await Promise.all([a.signingKey(), b.signingKey()]);
    expect(first.kid).toBe(second.kid);
    expect((await (await open()).signingKey()).kid).toBe(first.kid);
  });

  it('manages the shared accounts with arazzo-mcp accounts --database-url', async () => {
    const run = async (argv: string[], stdin?: string) => {
      const out: string[] = [];
      const code = await runCli(argv, {
        out: (text) => out.push(text),
        err: (text) => out.push(text),
        env: { ARAZZO_MCP_DATABASE_URL: url },
        readStdin: stdin === undefined ? undefined : async () => stdin,
      });
      return { code, out: out.join('\n') };
    };
    const added = await run(
      ['accounts', 'add', '--email', 'carol@example.com', '--password-stdin'],
      'carol password\n',
    );
    expect(added).toMatchObject({ code: 0, out: expect.stringContaining('Created account') });
    const store = await open();
    expect((await store.verify('carol@example.com', 'carol password')).ok).toBe(true);
    expect((await run(['accounts', 'list'])).out).toContain('carol@example.com');
    expect((await run(['accounts', 'remove', '--email', 'carol@example.com'])).code).toBe(0);
    expect((await store.verify('carol@example.com', 'carol password')).ok).toBe(false);
  });

  it('answers StateUnavailableError while PostgreSQL is down, then recovers on its own', async () => {
    const store = await open();
    await store.count();
    await postgres.stop();
    try {
      await expect(store.findById('x')).rejects.toBeInstanceOf(StateUnavailableError);
    } finally {
      await postgres.start();
    }
    const deadline = Date.now() + 10_000;
    let count: number | undefined;
    while (count === undefined && Date.now() < deadline) {
      count = await store.count().catch(() => undefined);
    }
    expect(count).toBeGreaterThanOrEqual(1);
  });
});
