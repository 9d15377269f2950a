import { randomBytes } from 'node:crypto';
import {
  type Clock,
  epochSeconds,
  hashSecret,
  McpIdentityError,
  randomToken,
  redirectUriProblem,
  secretMatcher,
  systemClock,
  TOKEN_EXCHANGE_GRANT,
  verifySecret,
} from '@mcp-identity/common';
import { type Db, inTransaction, statement } from './db.js';
import { ReadCache } from './read-cache.js';

/**
 * Client ids are letters and digits only, as WSO2 issues them: a base64url id may begin with
 * `-`, which a command line then reads as an option (`idp apps rotate-secret -Lx…`).
 * 24 characters of 62 carry about 143 bits.
 */
function newClientId(): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let id = '';
  while (id.length < 24) {
    for (const byte of randomBytes(32)) {
      // 248 = 4 × 62: bytes above it are dropped so every character is equally likely.
      if (byte < 248 && id.length < 24) id += alphabet[byte % 62];
    }
  }
  return id;
}

export type GrantType =
  | 'client_credentials'
  | 'authorization_code'
  | 'refresh_token'
  | typeof TOKEN_EXCHANGE_GRANT;

/**
 * What an application holding the token-exchange grant may exchange (RFC 8693), as WSO2 IS
 * configures it per application: tokens issued for one of `subjectAudiences` (an `aud` value
 * of the subject token), for a token whose audience is one of `resources` (RFC 8707).
 */
export type TokenExchangePolicy = {
  subjectAudiences: string[];
  resources: string[];
};

export type Application = {
  clientId: string;
  name: string;
  grantTypes: GrantType[];
  scopes: string[];
  redirectUris: string[];
  /** Public clients (no secret) registered through RFC 7591. */
  dynamic: boolean;
  /** Whether a token was ever issued to it: a dynamic client never used expires. */
  used: boolean;
  confidential: boolean;
  createdAt: number;
  /** Set when the application may exchange tokens (its grant types hold TOKEN_EXCHANGE_GRANT). */
  tokenExchange?: TokenExchangePolicy;
};

export type CreateApplicationInput = {
  name: string;
  clientId?: string;
  clientSecret?: string;
  grantTypes?: GrantType[];
  scopes?: string[];
  redirectUris?: string[];
  tokenExchange?: TokenExchangePolicy;
  /** A public client has no secret and authenticates with PKCE only. */
  public?: boolean;
  dynamic?: boolean;
  /** The network (`clientNetwork`) a dynamic client was registered from. */
  registeredFrom?: string;
};

type AppRow = {
  client_id: string;
  name: string;
  secret_hash: string | null;
  grant_types: string;
  scopes: string;
  redirect_uris: string;
  dynamic: number;
  used_at: number | null;
  created_at: number;
  token_exchange: string | null;
};

/** The grant types an application may hold. */
export const GRANT_TYPES: readonly GrantType[] = [
  'client_credentials',
  'authorization_code',
  'refresh_token',
  TOKEN_EXCHANGE_GRANT,
];

export class AppError extends McpIdentityError {
  readonly code = 'ERR_APP';
}

/** Redirect URIs follow the same allow-list as dynamic registration, whoever registers them. */
function checkRedirectUris(uris: readonly string[] | undefined): void {
  for (const uri of uris ?? []) {
    const problem = redirectUriProblem(uri);
    if (problem) throw new AppError(problem);
  }
}

/**
 * A token-exchange policy names absolute URIs (RFC 8693 §2.1: `resource` is an absolute URI;
 * `aud` values of our tokens are resource identifiers), and only an application that holds the
 * grant and can authenticate has one: the grant is for confidential clients (RFC 8693 §2.1).
 */
function checkTokenExchange(
  grantTypes: readonly GrantType[],
  policy: TokenExchangePolicy | undefined,
  confidential: boolean,
): void {
  const exchanges = grantTypes.includes(TOKEN_EXCHANGE_GRANT);
  if (policy && !exchanges) {
    throw new AppError(`tokenExchange needs the ${TOKEN_EXCHANGE_GRANT} grant type`);
  }
  if (exchanges && !confidential) {
    throw new AppError('Only a confidential application may use the token-exchange grant');
  }
  for (const uri of [...(policy?.subjectAudiences ?? []), ...(policy?.resources ?? [])]) {
    if (!URL.canParse(uri) || uri.includes('#')) {
      throw new AppError(`tokenExchange: not an absolute URI without a fragment: ${uri}`);
    }
  }
}

const storedPolicy = (policy: TokenExchangePolicy | undefined): string | null =>
  policy
    ? JSON.stringify({
        subjectAudiences: [...new Set(policy.subjectAudiences)],
        resources: [...new Set(policy.resources)],
      })
    : null;

// Frozen: one object may be handed to many requests (see `AppStore.rows`).
function toApplication(row: AppRow): Application {
  const grantTypes = JSON.parse(row.grant_types) as GrantType[];
  const policy =
    row.token_exchange === null
      ? undefined
      : (JSON.parse(row.token_exchange) as TokenExchangePolicy);
  return Object.freeze({
    clientId: row.client_id,
    name: row.name,
    grantTypes: Object.freeze(grantTypes) as GrantType[],
    scopes: Object.freeze(JSON.parse(row.scopes)) as string[],
    redirectUris: Object.freeze(JSON.parse(row.redirect_uris)) as string[],
    dynamic: row.dynamic === 1,
    used: row.used_at !== null,
    confidential: row.secret_hash !== null,
    createdAt: row.created_at,
    // An application given the grant without a policy may exchange nothing yet.
    ...(grantTypes.includes(TOKEN_EXCHANGE_GRANT)
      ? { tokenExchange: Object.freeze(policy ?? { subjectAudiences: [], resources: [] }) }
      : {}),
  });
}

type StoredApplication = { app: Application; secretHash: string | null };

/** How long a dynamic client that never obtained a token is kept: a day, as Area A's clients. */
export const UNUSED_CLIENT_TTL_SECONDS = 24 * 60 * 60;

export type AppStoreOptions = {
  clock?: Clock;
  /** A dynamic client without a token is gone this long after registering. */
  unusedClientTtlSeconds?: number;
};

/** OAuth client applications; secrets are stored as scrypt hashes and shown once. */
export class AppStore {
  /**
   * Secrets already verified with scrypt, as matchers (SHA-256 digests) keyed by client id and
   * the stored hash: tools request a token per call, and a rotation (even by another process)
   * changes the stored hash, which invalidates the entry.
   */
  private readonly verified = new Map<
    string,
    { storedHash: string; matches: (secret: string) => boolean }
  >();
  /** Applications by client id, read again after any write to the database. */
  private readonly rows: ReadCache<string, StoredApplication | undefined>;

  private readonly clock: Clock;
  private readonly unusedTtl: number;

  constructor(
    private readonly db: Db,
    options: AppStoreOptions = {},
  ) {
    this.rows = new ReadCache(db, 256);
    this.clock = options.clock ?? systemClock;
    this.unusedTtl = options.unusedClientTtlSeconds ?? UNUSED_CLIENT_TTL_SECONDS;
  }

  async create(
    input: CreateApplicationInput,
  ): Promise<{ app: Application; clientSecret?: string }> {
    const grantTypes = input.grantTypes ?? ['client_credentials'];
    for (const grant of grantTypes) {
      if (!GRANT_TYPES.includes(grant)) throw new AppError(`Unsupported grant type: ${grant}`);
    }
    if (!input.name.trim()) throw new AppError('Application name is required');
    checkRedirectUris(input.redirectUris);
    checkTokenExchange(grantTypes, input.tokenExchange, !input.public);
    const clientId = input.clientId ?? newClientId();
    if (this.get(clientId)) throw new AppError(`Application with client id ${clientId} exists`);
    const clientSecret = input.public ? undefined : (input.clientSecret ?? randomToken(32));
    const secretHash = clientSecret === undefined ? null : await hashSecret(clientSecret);
    statement(
      this.db,
      `INSERT INTO apps (client_id, name, secret_hash, grant_types, scopes, redirect_uris, dynamic, created_at, registered_from, token_exchange)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      clientId,
      input.name,
      secretHash,
      JSON.stringify(grantTypes),
      JSON.stringify(input.scopes ?? []),
      JSON.stringify(input.redirectUris ?? []),
      input.dynamic ? 1 : 0,
      epochSeconds(this.clock),
      input.registeredFrom ?? null,
      storedPolicy(input.tokenExchange),
    );
    const app = this.get(clientId)!;
    return clientSecret === undefined ? { app } : { app, clientSecret };
  }

  get(clientId: string): Application | undefined {
    return this.stored(clientId)?.app;
  }

  /** An expired dynamic client is not found, whether or not it has been removed yet. */
  private stored(clientId: string): StoredApplication | undefined {
    const stored = this.rows.get(clientId, () => {
      const row = statement(this.db, 'SELECT * FROM apps WHERE client_id = ?').get(clientId) as
        | AppRow
        | undefined;
      return row && { app: toApplication(row), secretHash: row.secret_hash };
    });
    return stored && !this.expired(stored.app) ? stored : undefined;
  }

  private expired(app: Application): boolean {
    return app.dynamic && !app.used && app.createdAt <= epochSeconds(this.clock) - this.unusedTtl;
  }

  list(): Application[] {
    const rows = statement(
      this.db,
      'SELECT * FROM apps ORDER BY created_at, name',
    ).all() as AppRow[];
    return rows.map(toApplication).filter((app) => !this.expired(app));
  }

  /** Clients registered through RFC 7591 (bounded by the registration endpoint). */
  countDynamic(): number {
    return (
      statement(this.db, 'SELECT count(*) AS n FROM apps WHERE dynamic = 1').get() as { n: number }
    ).n;
  }

  /** Records a dynamic client's first token: from then on it does not expire or get evicted. */
  markUsed(app: Application): void {
    if (!app.dynamic || app.used) return;
    statement(this.db, 'UPDATE apps SET used_at = ? WHERE client_id = ? AND used_at IS NULL').run(
      epochSeconds(this.clock),
      app.clientId,
    );
  }

  /**
   * Makes room for one more dynamic client under `cap`: removes the expired ones, then, while
   * the cap is reached, the oldest never-used client of the network that registered the most
   * of them, so a flood of registrations evicts its own clients before anyone else's. False
   * when only used clients are left.
   */
  makeRoomForDynamic(cap: number): boolean {
    return inTransaction(this.db, () => {
      statement(
        this.db,
        'DELETE FROM apps WHERE dynamic = 1 AND used_at IS NULL AND created_at <= ?',
      ).run(epochSeconds(this.clock) - this.unusedTtl);
      // count(*) of the whole table is answered from the b-tree without reading rows, and it
      // bounds the dynamic clients from above: the exact count only once it reaches the cap.
      const total = () =>
        (statement(this.db, 'SELECT count(*) AS n FROM apps').get() as { n: number }).n;
      while (total() >= cap && this.countDynamic() >= cap) {
        const heaviest = statement(
          this.db,
          `SELECT registered_from AS network FROM apps WHERE dynamic = 1 AND used_at IS NULL
             GROUP BY registered_from ORDER BY count(*) DESC, min(created_at) LIMIT 1`,
        ).get() as { network: string | null } | undefined;
        if (!heaviest) return false;
        statement(
          this.db,
          `DELETE FROM apps WHERE rowid = (SELECT rowid FROM apps
             WHERE dynamic = 1 AND used_at IS NULL AND registered_from IS ?
             ORDER BY created_at, rowid LIMIT 1)`,
        ).run(heaviest.network);
      }
      return true;
    });
  }

  delete(clientId: string): boolean {
    return statement(this.db, 'DELETE FROM apps WHERE client_id = ?').run(clientId).changes > 0;
  }

  /**
   * Updates the scopes, grant types, redirect URIs and token-exchange policy of an existing
   * application; `tokenExchange` omitted keeps the stored one while the grant is kept.
   */
  update(
    clientId: string,
    input: Partial<
      Pick<
        CreateApplicationInput,
        'grantTypes' | 'scopes' | 'redirectUris' | 'name' | 'tokenExchange'
      >
    >,
  ): void {
    const app = this.get(clientId);
    if (!app) throw new AppError(`No application with client id ${clientId}`);
    checkRedirectUris(input.redirectUris);
    const grantTypes = input.grantTypes ?? app.grantTypes;
    const policy = grantTypes.includes(TOKEN_EXCHANGE_GRANT)
      ? (input.tokenExchange ?? app.tokenExchange)
      : input.tokenExchange;
    checkTokenExchange(grantTypes, policy, app.confidential);
    statement(
      this.db,
      'UPDATE apps SET name = ?, grant_types = ?, scopes = ?, redirect_uris = ?, token_exchange = ? WHERE client_id = ?',
    ).run(
      input.name ?? app.name,
      JSON.stringify(grantTypes),
      JSON.stringify(input.scopes ?? app.scopes),
      JSON.stringify(input.redirectUris ?? app.redirectUris),
      storedPolicy(policy),
      clientId,
    );
  }

  /** Replaces the secret of a confidential application; the new secret is returned once. */
  async rotateSecret(clientId: string, newSecret?: string): Promise<string> {
    const app = this.get(clientId);
    if (!app) throw new AppError(`No application with client id ${clientId}`);
    if (!app.confidential) throw new AppError(`Application ${clientId} is a public client`);
    const secret = newSecret ?? randomToken(32);
    statement(this.db, 'UPDATE apps SET secret_hash = ? WHERE client_id = ?').run(
      await hashSecret(secret),
      clientId,
    );
    return secret;
  }

  /** Sets the stored secret to `secret` unless it already verifies (bootstrap idempotence). */
  async ensureSecret(clientId: string, secret: string): Promise<void> {
    if (!(await this.authenticate(clientId, secret))) await this.rotateSecret(clientId, secret);
  }

  /** The application when `secret` matches its stored hash. */
  async authenticate(clientId: string, secret: string): Promise<Application | undefined> {
    const stored = this.stored(clientId);
    if (!stored?.secretHash) return undefined;
    const { app, secretHash } = stored;
    const cached = this.verified.get(clientId);
    if (cached?.storedHash === secretHash && cached.matches(secret)) return app;
    if (!(await verifySecret(secret, secretHash))) return undefined;
    this.verified.set(clientId, { storedHash: secretHash, matches: secretMatcher(secret) });
    return app;
  }
}
