import { statSync } from 'node:fs';
import { join } from 'node:path';
import { AccountError, AccountStore, runCli } from '@mcp-identity/arazzo-mcp';
import { useTempDir } from '@mcp-identity/common/testing';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';

const tempDir = useTempDir('arazzo-mcp-accounts-');

async function cli(argv: string[], stdin?: string) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, {
    out: (text) => out.push(text),
    err: (text) => err.push(text),
    env: {},
    readStdin: stdin === undefined ? undefined : async () => stdin,
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

async function verify(dataDir: string, email: string, password: string) {
  const store = AccountStore.open(dataDir);
  try {
    return (await store.verify(email, password)).ok;
  } finally {
    store.close();
  }
}

describe('arazzo-mcp accounts', () => {
  it('adds an account with a password read from stdin, without echoing it', async () => {
    const dir = join(tempDir(), 'data');
    const added = await cli(
      ['accounts', 'add', '--email', 'Alice@Example.com', '--password-stdin', '--data-dir', dir],
      'correct horse battery\n',
    );
    expect(added.code).toBe(0);
    expect(added.out).toMatch(/^Created account alice@example\.com \(id [0-9a-f-]{36}\)$/);
    expect(added.out).not.toContain('correct horse');
    expect(await verify(dir, 'ALICE@example.com', 'correct horse battery')).toBe(true);
    expect(await verify(dir, 'alice@example.com', 'correct horse battery\n')).toBe(false);
    // The database is a WAL-mode SQLite file in a data directory only its owner can read.
    const db = new Database(join(dir, 'accounts.db'), { readonly: true });
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();
    expect(statSync(dir).mode & 0o077).toBe(0);
  });

  it('generates a password when none is given and prints it once', async () => {
    const dir = tempDir();
    const added = await cli(['accounts', 'add', '--email', 'bob@example.com', '--data-dir', dir]);
    expect(added.code).toBe(0);
    const password = /^Password \(shown only this once\): (\S+)$/m.exec(added.out)?.[1];
    expect(password).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(await verify(dir, 'bob@example.com', password ?? '')).toBe(true);
    const listed = await cli(['accounts', 'list', '--data-dir', dir]);
    expect(listed.out).not.toContain(password);
  });

  it('refuses a duplicate e-mail whatever its case', async () => {
    const dir = tempDir();
    await cli(['accounts', 'add', '--email', 'carol@example.com', '--data-dir', dir]);
    const again = await cli([
      'accounts',
      'add',
      '--email',
      ' CAROL@example.com',
      '--data-dir',
      dir,
    ]);
    expect(again).toEqual({
      code: 1,
      out: '',
      err: 'error: an account with e-mail carol@example.com already exists',
    });
  });

  it('lists accounts with id and creation time', async () => {
    const dir = tempDir();
    await cli(['accounts', 'add', '--email', 'a@example.com', '--data-dir', dir]);
    await cli(['accounts', 'add', '--email', 'b@example.com', '--data-dir', dir]);
    const listed = await cli(['accounts', 'list', '--data-dir', dir]);
    expect(listed.code).toBe(0);
    const rows = listed.out.split('\n').map((line) => line.split('\t'));
    expect(rows.map((row) => row[0])).toEqual(['a@example.com', 'b@example.com']);
    for (const row of rows) {
      expect(row[1]).toMatch(/^[0-9a-f-]{36}$/);
      expect(Number.isNaN(Date.parse(row[2] ?? ''))).toBe(false);
    }
  });

  it('changes a password: the old one stops working, a wrong one never worked', async () => {
    const dir = tempDir();
    await cli(
      ['accounts', 'add', '--email', 'dave@example.com', '--password-stdin', '--data-dir', dir],
      'first password',
    );
    expect(await verify(dir, 'dave@example.com', 'wrong password')).toBe(false);
    const changed = await cli(
      ['accounts', 'passwd', '--email', 'DAVE@example.com', '--password-stdin', '--data-dir', dir],
      'second password\r\n',
    );
    expect(changed).toEqual({ code: 0, out: 'Changed the password of dave@example.com', err: '' });
    expect(await verify(dir, 'dave@example.com', 'first password')).toBe(false);
    expect(await verify(dir, 'dave@example.com', 'second password')).toBe(true);
  });

  it('removes an account, and says so when there is none', async () => {
    const dir = tempDir();
    await cli(['accounts', 'add', '--email', 'erin@example.com', '--data-dir', dir]);
    const removed = await cli([
      'accounts',
      'remove',
      '--email',
      'erin@example.com',
      '--data-dir',
      dir,
    ]);
    expect(removed).toEqual({ code: 0, out: 'Removed account erin@example.com', err: '' });
    expect((await cli(['accounts', 'list', '--data-dir', dir])).out).toBe('');
    const missing = await cli([
      'accounts',
      'remove',
      '--email',
      'erin@example.com',
      '--data-dir',
      dir,
    ]);
    expect(missing).toEqual({
      code: 1,
      out: '',
      err: 'error: no account with e-mail erin@example.com',
    });
    const passwd = await cli([
      'accounts',
      'passwd',
      '--email',
      'nobody@example.com',
      '--data-dir',
      dir,
    ]);
    expect(passwd.code).toBe(1);
    expect(passwd.err).toBe('error: no account with e-mail nobody@example.com');
  });

  it('rejects bad input with a clear message', async () => {
    const dir = tempDir();
    const badEmail = await cli(['accounts', 'add', '--email', 'not-an-email', '--data-dir', dir]);
    expect(badEmail).toMatchObject({
      code: 1,
      err: 'error: not an e-mail address: "not-an-email"',
    });
    const short = await cli(
      ['accounts', 'add', '--email', 'f@example.com', '--password-stdin', '--data-dir', dir],
      'short',
    );
    expect(short).toMatchObject({
      code: 1,
      err: 'error: the password must have 8 to 1024 characters',
    });
    await expect(cli(['accounts', 'add', '--data-dir', dir])).rejects.toThrow(/email.*required/s);
    await expect(cli(['accounts', 'rename', '--data-dir', dir])).rejects.toThrow(
      /unknown accounts action 'rename'/,
    );
  });

  it('verifies an unknown e-mail by hashing too, and answers the same way', async () => {
    const store = AccountStore.open(tempDir());
    try {
      await store.add('gina@example.com', 'gina password');
      expect(await store.verify('nobody@example.com', 'gina password')).toEqual({ ok: false });
      expect(await store.verify('gina@example.com', 'x'.repeat(5000))).toEqual({ ok: false });
      await expect(store.add('GINA@example.com', 'another one')).rejects.toBeInstanceOf(
        AccountError,
      );
    } finally {
      store.close();
    }
  });
});
