import {
  AccountError,
  AccountStore,
  type Accounts,
  LOGIN_PATH,
  PostgresAccountStore,
  runCli,
} from '@mcp-identity/arazzo-mcp';
import type { RunningServer } from '@mcp-identity/common';
import {
  describeRequiring,
  postgresMissing,
  startPostgres,
  type TestPostgres,
  useTempDir,
} from '@mcp-identity/common/testing';
import { loginFormFields } from '@mcp-identity/oauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIRECT_URI, registerClient } from './support/authorize.js';
import { startBuiltinServer } from './support/builtin-server.js';

const tempDir = useTempDir('arazzo-mcp-account-input-');
const ADMIN = 'admin@localhost';
/** E-mail inputs no account can have; a NUL is what PostgreSQL's text cannot even compare. */
const MALFORMED = [
  'admin\u0000@localhost',
  '\u0000',
  'admin@local\u0001host',
  'admin@\u007flocalhost',
];

/**
 * Account input is validated at the boundary, the same for SQLite and PostgreSQL: what no
 * account can have is a 4xx in each surface's own shape (the login API's JSON, the login form's
 * page, the CLI's exit 1), never a 5xx, and changes nothing.
 */
function accountInputContract(where: () => { dataDir: string; databaseUrl?: string }) {
  let server: RunningServer;
  let password = '';
  let options: { dataDir: string; databaseUrl?: string };

  beforeAll(async () => {
    options = where();
    server = await startBuiltinServer(tempDir(), {
      ...options,
      onInitialAccount: (account) => {
        password = account.password;
      },
    });
  });
  afterAll(() => server?.close());

  const openStore = async (): Promise<Accounts> =>
    options.databaseUrl === undefined
      ? AccountStore.open(options.dataDir)
      : PostgresAccountStore.open(options.databaseUrl);

  async function apiLogin(email: string, secret = password) {
    const response = await fetch(`${server.url}${LOGIN_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: secret }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  it.each(MALFORMED)(
    'answers /api/auth/login with %j as an e-mail 400 invalid_request',
    async (email) => {
      expect(await apiLogin(email)).toMatchObject({
        status: 400,
        body: { error: 'invalid_request' },
      });
      expect((await apiLogin(ADMIN)).status).toBe(200);
    },
  );

  it.each(MALFORMED)(
    're-renders the login form for %j with 400, without calling the login',
    async (email) => {
      const registration = await registerClient(server.url);
      const { client_id: clientId } = (await registration.json()) as { client_id: string };
      const query = new URLSearchParams({
        client_id: clientId,
        redirect_uri: REDIRECT_URI,
        response_type: 'code',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGcSuJZ-cM',
        code_challenge_method: 'S256',
        state: 'nul',
      });
      const page = await fetch(`${server.url}/oauth/authorize?${query}`);
      const fields = loginFormFields(await page.text());
      const response = await fetch(`${server.url}/oauth/authorize`, {
        method: 'POST',
        body: new URLSearchParams({ ...fields, email, password }),
        redirect: 'manual',
      });
      expect(response.status).toBe(400);
      const html = await response.text();
      expect(html).toContain('Enter a valid e-mail address.');
      expect(html).toContain('name="csrf_token"');
    },
  );

  it('refuses the same input in the stores and the accounts CLI, changing nothing', async () => {
    const store = await openStore();
    try {
      const before = await store.list();
      for (const email of MALFORMED) {
        expect(await store.verify(email, password)).toEqual({ ok: false });
        await expect(store.add(email, 'a good password')).rejects.toMatchObject({
          code: 'invalid_email',
        });
        await expect(store.setPassword(email, 'a good password')).rejects.toBeInstanceOf(
          AccountError,
        );
        // SQLite's remove is synchronous: it throws rather than rejects.
        await expect(Promise.resolve().then(() => store.remove(email))).rejects.toMatchObject({
          code: 'invalid_email',
        });
      }
      const location =
        options.databaseUrl === undefined
          ? ['--data-dir', options.dataDir]
          : ['--database-url', options.databaseUrl];
      for (const action of ['remove', 'add', 'passwd']) {
        const err: string[] = [];
        const code = await runCli(
          ['accounts', action, '--email', MALFORMED[0] as string, ...location],
          {
            out: () => undefined,
            err: (text) => err.push(text),
            env: {},
          },
        );
        expect({ action, code, err: err.join('\n') }).toEqual({
          action,
          code: 1,
          err: expect.stringContaining('not an e-mail address'),
        });
      }
      expect(await store.list()).toEqual(before);
      expect((await store.verify(ADMIN, password)).ok).toBe(true);
    } finally {
      await store.close();
    }
  });
}

describe('account input with SQLite', () => {
  accountInputContract(() => ({ dataDir: tempDir() }));
});

describeRequiring('account input with PostgreSQL', postgresMissing(), () => {
  let postgres: TestPostgres;
  let databaseUrl = '';
  beforeAll(async () => {
    postgres = await startPostgres();
    databaseUrl = postgres.createDatabase('area_a_input');
  });
  afterAll(() => postgres?.close());
  accountInputContract(() => ({ dataDir: tempDir(), databaseUrl }));
});
