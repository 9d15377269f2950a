import { InvalidArgumentError } from '@mcp-identity/common';
import { AccountStore, type Accounts, generatePassword } from '../auth/accounts.js';
import { PostgresAccountStore } from '../auth/accounts-postgres.js';
import type { AccountAction, AccountsOptions } from './command-line.js';
import type { CliIo } from './io.js';

/** `accounts add|list|remove|passwd` on the SQLite or PostgreSQL account store. */
export async function manageAccounts(
  action: AccountAction,
  options: AccountsOptions,
  io: CliIo,
): Promise<number> {
  const store: Accounts =
    options.databaseUrl === undefined
      ? AccountStore.open(options.dataDir)
      : await PostgresAccountStore.open(options.databaseUrl);
  try {
    const email = options.email ?? '';
    switch (action) {
      case 'list':
        for (const account of await store.list()) {
          io.out(`${account.email}\t${account.id}\t${account.createdAt}`);
        }
        return 0;
      case 'remove':
        io.out(`Removed account ${(await store.remove(email)).email}`);
        return 0;
      case 'add':
      case 'passwd': {
        const { password, generated } = await obtainPassword(options, io);
        const account =
          action === 'add'
            ? await store.add(email, password)
            : await store.setPassword(email, password);
        io.out(
          action === 'add'
            ? `Created account ${account.email} (id ${account.id})`
            : `Changed the password of ${account.email}`,
        );
        if (generated) io.out(`Password (shown only this once): ${password}`);
        return 0;
      }
    }
  } finally {
    await store.close();
  }
}

/** The password from stdin (one trailing line break dropped), or a generated one. */
async function obtainPassword(
  options: AccountsOptions,
  io: CliIo,
): Promise<{ password: string; generated: boolean }> {
  if (!options.passwordStdin) return { password: generatePassword(), generated: true };
  if (io.readStdin === undefined) throw new InvalidArgumentError('standard input is not available');
  return { password: (await io.readStdin()).replace(/\r?\n$/, ''), generated: false };
}
