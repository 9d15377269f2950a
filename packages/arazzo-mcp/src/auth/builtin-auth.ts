import { join } from 'node:path';
import {
  type ClientIdMetadataOptions,
  createCorsHook,
  createOriginPolicy,
  createRedisThrottles,
  UnavailableError,
} from '@mcp-identity/common';
import {
  type Clock,
  createAccessTokenIssuer,
  createIssuerResolver,
  createMcpGuard,
  loadOrCreateSigningKey,
  oauthServer,
  publicJwks,
  RedisOAuthStore,
  SCOPE,
  type SigningKey,
} from '@mcp-identity/oauth';
import type { FastifyPluginAsync } from 'fastify';
import type { HttpAuth } from '../http/app.js';
import { type Account, AccountStore, type Accounts, generatePassword } from './accounts.js';
import { PostgresAccountStore } from './accounts-postgres.js';
import { appLoginRoutes } from './app-login.js';

export const DEFAULT_DATA_DIR = '.data/area-a';
export const DEFAULT_ADMIN_EMAIL = 'admin@localhost';
export const SIGNING_KEY_FILE = 'signing-key.json';

export interface BuiltinAuthOptions {
  /** Holds `accounts.db` and `signing-key.json`. Default `.data/area-a`. */
  dataDir?: string;
  /**
   * PostgreSQL keeping the accounts and the signing key for every instance, instead of the
   * data directory's files.
   */
  databaseUrl?: string;
  /** Fixes the issuer (scheme, host, path base); otherwise derived from each request. */
  publicUrl?: string;
  /** Trust `X-Forwarded-*`: for the issuer and for the client IP the rate limits count. */
  trustProxy?: boolean;
  /** E-mail of the account created when the store is empty. Default `admin@localhost`. */
  initialAccountEmail?: string;
  /**
   * Receives the generated password of that first account, once. Default: one line on stdout
   * (never the logger, which may ship lines elsewhere).
   */
  onInitialAccount?: (account: { email: string; password: string }) => void;
  /**
   * Browser origins (`https://inspector.example.com`) that may read the discovery documents
   * and call registration and token endpoints, besides loopback origins and `publicUrl`'s.
   */
  allowedOrigins?: readonly string[];
  /** Lifetime of OAuth access tokens (default 300 s) and normal-login tokens (default 3600 s). */
  accessTokenTtlSeconds?: number;
  loginTokenTtlSeconds?: number;
  /**
   * Redis for the OAuth state (codes, clients, transactions, refresh tokens) and the login
   * throttles' counters; else process memory.
   */
  stateUrl?: string;
  /** See `OAuthServerOptions.refreshTokenRaceWindowSeconds`; default 2 s. */
  refreshTokenRaceWindowSeconds?: number;
  /** See `OAuthServerOptions.clientIdMetadata`: how client metadata documents are fetched. */
  clientIdMetadata?: ClientIdMetadataOptions;
  /** Milliseconds since the epoch, for every expiry and window; tests inject their own. */
  clock?: Clock;
}

/**
 * What `createArazzoMcpApp` mounts for `--auth builtin`: `createMcpGuard`'s hook (it acts on
 * `/mcp` and below only) and the routes of the authorization server and the normal login.
 */
export interface BuiltinAuth extends HttpAuth {
  /** Closes the account database and the state store's connections. */
  close(): Promise<void>;
}

/** The two lines announcing the first account; its password is never shown again. */
/**
 * The endpoints a browser-based MCP client (MCP Inspector's web UI) reads across origins:
 * RFC 9728 and RFC 8414 discovery, RFC 7591 registration, the token endpoint and the keys.
 * `/mcp` itself gets CORS from the HTTP app.
 */
export const CORS_AUTH_PATHS = [
  '/.well-known/oauth-protected-resource',
  '/.well-known/oauth-protected-resource/mcp',
  '/.well-known/oauth-authorization-server',
  '/oauth/register',
  '/oauth/token',
  '/oauth/jwks',
] as const;

export function describeInitialAccount(account: { email: string; password: string }): string {
  return `Created the first account: ${account.email}\nPassword (shown only this once): ${account.password}`;
}

function printInitialAccount(account: { email: string; password: string }): void {
  process.stdout.write(`${describeInitialAccount(account)}\n`);
}

/**
 * Area A's own authorization server around the Arazzo tools: the account store and signing
 * key of the data directory, the oauth plugin with the store as its login operation, the
 * guard, and the normal login. Creates the first account when the store is empty.
 */
export async function setUpBuiltinAuth(options: BuiltinAuthOptions = {}): Promise<BuiltinAuth> {
  // First: an invalid origin throws before anything is opened.
  const cors = createCorsHook({
    policy: createOriginPolicy({
      ownOrigins: options.publicUrl === undefined ? [] : [options.publicUrl],
      allowedOrigins: options.allowedOrigins,
    }),
    paths: CORS_AUTH_PATHS,
    methods: ['GET', 'POST'],
  });
  const { accounts, key } = await openAccounts(options);
  const store = options.stateUrl ? new RedisOAuthStore(options.stateUrl) : undefined;
  const throttles = options.stateUrl ? createRedisThrottles(options.stateUrl) : undefined;
  try {
    await Promise.all([store?.ready(), throttles?.ready()]);
  } catch (error) {
    await accounts.close();
    await store?.close();
    throttles?.close();
    const where = new URL(options.stateUrl as string).host;
    throw new UnavailableError(`cannot reach the OAuth state store (Redis at ${where})`, {
      cause: error,
    });
  }
  const issuerOptions = { publicUrl: options.publicUrl, trustProxy: options.trustProxy === true };
  const guard = createMcpGuard({
    key: key.publicKey,
    algorithms: [key.alg],
    clock: options.clock,
    ...issuerOptions,
    // A removed account's access tokens stop working at once, not when they expire.
    isSubjectActive: async (subject) => (await accounts.findById(subject)) !== undefined,
  });
  const routes: FastifyPluginAsync = async (app) => {
    // Added before the plugins below so that their routes inherit it; the OPTIONS routes give
    // preflights a route in this context, where the hook answers them.
    app.addHook('onRequest', cors);
    for (const path of CORS_AUTH_PATHS) {
      app.options(path, async (_request, reply) =>
        reply.code(204).header('allow', 'GET, POST').send(),
      );
    }
    await app.register(oauthServer, {
      ...issuerOptions,
      ...(store ? { store } : {}),
      ...(throttles ? { throttles: throttles.factory } : {}),
      applicationName: 'Arazzo MCP',
      refreshTokenRaceWindowSeconds: options.refreshTokenRaceWindowSeconds,
      clientIdMetadata: options.clientIdMetadata,
      clock: options.clock,
      // The application's login operation, remember-me false: it verifies and keeps nothing.
      login: async ({ email, password }) => {
        const result = await accounts.verify(email, password);
        return result.ok
          ? { ok: true, userId: result.account.id }
          : { ok: false, reason: 'invalid_credentials' };
      },
      // Every token request re-reads the account: `accounts remove` (from the CLI, another
      // process) ends the grant at its next refresh, which also revokes its refresh tokens.
      checkSubject: async ({ userId }) =>
        (await accounts.findById(userId)) === undefined
          ? { active: false }
          : { active: true, scopes: [SCOPE] },
      issueAccessToken: createAccessTokenIssuer(key, {
        ttlSeconds: options.accessTokenTtlSeconds ?? 300,
        clock: options.clock,
      }),
      jwks: async () => publicJwks(key),
    });
    await app.register(appLoginRoutes, {
      accounts,
      key,
      issuer: createIssuerResolver(issuerOptions),
      tokenTtlSeconds: options.loginTokenTtlSeconds,
      clock: options.clock,
      throttles: throttles?.factory,
    });
  };
  return {
    guard,
    routes,
    trustProxy: issuerOptions.trustProxy,
    close: async () => {
      throttles?.close();
      await Promise.all([accounts.close(), store?.close()]);
    },
  };
}

/**
 * The accounts and signing key: in PostgreSQL when `databaseUrl` is set (shared by every
 * instance), else in the data directory. Creates the first account when there is none.
 */
async function openAccounts(
  options: BuiltinAuthOptions,
): Promise<{ accounts: Accounts; key: SigningKey }> {
  const email = options.initialAccountEmail ?? DEFAULT_ADMIN_EMAIL;
  const password = generatePassword();
  let accounts: Accounts | undefined;
  try {
    let first: Account | undefined;
    let key: SigningKey;
    if (options.databaseUrl !== undefined) {
      const shared = await PostgresAccountStore.open(options.databaseUrl);
      accounts = shared;
      key = await shared.signingKey();
      first = await shared.addFirst(email, password);
    } else {
      const dataDir = options.dataDir ?? DEFAULT_DATA_DIR;
      key = await loadOrCreateSigningKey(join(dataDir, SIGNING_KEY_FILE));
      const local = AccountStore.open(dataDir);
      accounts = local;
      if (local.count() === 0) first = await local.add(email, password);
    }
    if (first !== undefined) {
      (options.onInitialAccount ?? printInitialAccount)({ email: first.email, password });
    }
    return { accounts, key };
  } catch (error) {
    await accounts?.close();
    throw error;
  }
}
