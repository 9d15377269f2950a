import {
  batchedStdout,
  type ClientIdMetadataOptions,
  ClientIdMetadataResolver,
  type Clock,
  createApp,
  createCorsHook,
  createLogger,
  createOriginPolicy,
  ensureSelfSignedCertificate,
  type Logger,
  type OriginPolicy,
  registerHealthRoutes,
  startServer,
  systemClock,
} from '@mcp-identity/common';
import { requireAccessRules } from './auth/route-access.js';
import { currentUserScopes, isActiveUser } from './auth/subjects.js';
import { isUserToken, TokenService } from './auth/tokens.js';
import {
  applyBootstrap,
  type BootstrapDocument,
  type BootstrapResult,
  checkBootstrap,
  DEFAULT_BOOTSTRAP,
  readBootstrapFile,
} from './bootstrap/apply.js';
import { registerIdpMetrics } from './metrics.js';
import { OAuthClients } from './oauth/document-clients.js';
import { GrantStore } from './oauth/grants.js';
import { DEFAULT_OAUTH_LIMITS, type OAuthLimits, oauthRoutes } from './oauth/routes/index.js';
import { LoginTransactions } from './oauth/transactions.js';
import { MAX_BULK_PAYLOAD } from './scim/bulk.js';
import { GroupStore } from './scim/groups.js';
import { Locations } from './scim/render.js';
import { RoleStore } from './scim/roles.js';
import { scimRoutes } from './scim/routes.js';
import { KNOWN_SCOPES } from './scim/scopes.js';
import { ScimService } from './scim/service.js';
import { UserStore } from './scim/users.js';
import { AppStore } from './store/apps.js';
import { type Db, openDatabase } from './store/db.js';
import { KeyStore } from './store/keys.js';
import { ApiResourceStore } from './store/resources.js';

export type IdpOptions = {
  /** Directory for the database and TLS material; created if missing. */
  dataDir: string;
  /** Interface to bind (default 127.0.0.1). */
  host?: string;
  /** Port (default 9443; 0 picks a free one). */
  port?: number;
  /** Serve plain HTTP instead of HTTPS with the self-signed certificate. */
  http?: boolean;
  /** Base URL clients see (default: the bound address). */
  publicUrl?: string;
  /** Token issuer (default `<publicUrl>/oauth2/token`). */
  issuer?: string;
  /** Bootstrap file path or document (default: the custom attributes the tools use). */
  bootstrap?: string | BootstrapDocument;
  accessTokenTtlSeconds?: number;
  refreshTokenTtlSeconds?: number;
  logger?: Logger;
  /** Close on SIGINT/SIGTERM (default false: the embedding program decides). */
  handleSignals?: boolean;
  /**
   * Origins besides the IdP's own and loopback ones whose pages may call the discovery,
   * registration, token, revocation and JWKS endpoints (CORS).
   */
  allowedOrigins?: readonly string[];
  /** Abuse limits of the OAuth endpoints (defaults: `DEFAULT_OAUTH_LIMITS`). */
  limits?: Partial<OAuthLimits>;
  /** Every expiry's clock (tests). */
  clock?: Clock;
  /**
   * Client ID Metadata Documents: a client whose `client_id` is an HTTPS URL is described by the
   * document there, fetched by common's SSRF-safe resolver (a development allowance for private
   * addresses, extra CAs, size, time and cache bounds). On by default; `false` turns it off.
   */
  clientIdMetadata?: ClientIdMetadataOptions | false;
};

export type RunningIdp = {
  /** Every route the server registered (`METHOD /pattern`), each with an access rule. */
  routes: readonly string[];
  /** Bound base URL, e.g. http://127.0.0.1:53122. */
  url: string;
  publicUrl: string;
  issuer: string;
  tokenEndpoint: string;
  jwksUri: string;
  host: string;
  port: number;
  bootstrap: BootstrapResult;
  admin: IdpAdmin;
  close(): Promise<void>;
};

/** Direct access to the IdP's stores, for management commands and embedding programs. */
export type IdpAdmin = {
  apps: AppStore;
  /** API resources (RFC 8707) tokens can be bound to. */
  resources: ApiResourceStore;
  keys: KeyStore;
  service: ScimService;
};

/** Endpoints a browser-based client reads cross-origin. */
const CORS_PATHS = [
  '/.well-known/oauth-authorization-server',
  '/.well-known/oauth-authorization-server/oauth2/token',
  '/oauth2/jwks',
  '/oauth2/register',
  '/oauth2/token',
  '/oauth2/revoke',
];
const DEFAULT_ACCESS_TTL = 3600;
const DEFAULT_REFRESH_TTL = 86_400;
/** A login form can be submitted for this long after it was rendered. */
const LOGIN_FORM_TTL = 600;
// Browsers keep sockets they opened in advance; they never go idle, so close cuts them.
const CLOSE_GRACE_MS = 2000;

type Core = IdpAdmin & { db: Db; tokens: TokenService; grants: GrantStore; locations: Locations };

function createCore(
  dataDir: string,
  options: Pick<
    IdpOptions,
    'accessTokenTtlSeconds' | 'refreshTokenTtlSeconds' | 'clock' | 'limits'
  > & {
    create?: boolean;
    /** Whether the current request is the only one the server is serving. */
    alone?: () => boolean;
  },
  urls: { base: () => string; issuer: () => string },
): Core {
  const clock = options.clock ?? systemClock;
  const accessTtl = options.accessTokenTtlSeconds ?? DEFAULT_ACCESS_TTL;
  const db = openDatabase(dataDir, { create: options.create ?? true });
  const apps = new AppStore(db, {
    clock,
    ...(options.limits?.unusedClientTtlSeconds === undefined
      ? {}
      : { unusedClientTtlSeconds: options.limits.unusedClientTtlSeconds }),
  });
  const keys = new KeyStore(db, accessTtl, clock);
  const locations = new Locations(urls.base);
  const knownScopes = new Set(KNOWN_SCOPES);
  const service = new ScimService(
    new UserStore(db, clock),
    new GroupStore(db, clock),
    new RoleStore(db, {
      knownScopes: () => knownScopes,
      applicationName: (clientId) => apps.get(clientId)?.name,
      clock,
    }),
    locations,
  );
  const tokens = new TokenService(db, keys, {
    get issuer() {
      return urls.issuer();
    },
    accessTokenTtlSeconds: accessTtl,
    clock,
    isUserActive: (userId) => isActiveUser(service.users, userId),
    ...(options.alone ? { alone: options.alone } : {}),
  });
  const grants = new GrantStore(db, {
    codeTtlSeconds: 120,
    refreshTtlSeconds: options.refreshTokenTtlSeconds ?? DEFAULT_REFRESH_TTL,
    clock,
  });
  return {
    db,
    apps,
    keys,
    service,
    tokens,
    grants,
    locations,
    resources: new ApiResourceStore(db),
  };
}

/**
 * Opens the IdP's data directory without serving it (CLI `apps …` and `keys rotate`). Safe while
 * a server runs on the same directory: SQLite serialises the writers. With `create: false` the
 * directory must already hold an IdP (`NoIdpError` otherwise) and nothing is created.
 */
export function openIdpData(
  dataDir: string,
  options: { create?: boolean } = {},
): IdpAdmin & { close(): void } {
  const core = createCore(dataDir, options, {
    base: () => '',
    issuer: () => '',
  });
  return {
    apps: core.apps,
    resources: core.resources,
    keys: core.keys,
    service: core.service,
    close: () => core.db.close(),
  };
}

/** Starts the identity provider: OAuth 2.0 under /oauth2, SCIM 2.0 under /scim2. */
export async function startIdp(options: IdpOptions): Promise<RunningIdp> {
  const logger = options.logger ?? createLogger({ name: 'idp', destination: batchedStdout() });
  let publicUrl = '';
  let issuer = '';
  let inFlight = 0;
  const limits = { ...DEFAULT_OAUTH_LIMITS, ...options.limits };
  const core = createCore(
    options.dataDir,
    { ...options, alone: () => inFlight === 1 },
    { base: () => publicUrl, issuer: () => issuer },
  );
  try {
    await core.keys.ensureActiveKey();
    const document =
      typeof options.bootstrap === 'string'
        ? await readBootstrapFile(options.bootstrap)
        : checkBootstrap(options.bootstrap ?? DEFAULT_BOOTSTRAP);
    const bootstrap = await applyBootstrap(document, core);

    const tls = options.http ? undefined : await ensureSelfSignedCertificate(options.dataDir);
    const app = createApp({
      logger,
      bodyLimit: MAX_BULK_PAYLOAD,
      ...(tls ? { https: { cert: tls.cert, key: tls.key } } : {}),
    });
    const routes = requireAccessRules(app);
    // Counted from the router's match to the end of the response (or of its connection).
    app.addHook('onRequest', (_request, reply, done) => {
      inFlight++;
      reply.raw.once('close', () => {
        inFlight--;
      });
      done();
    });
    // Every route reads its own body, so each surface answers bad input in its own shape.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) =>
      done(null, body),
    );
    registerHealthRoutes(app, { livePath: '/api/health-check/v1.0/health' });
    const metrics = registerIdpMetrics(app, core.tokens);
    // Browser-based clients (MCP Inspector's web UI, say) read discovery, register and get
    // tokens from their own origin; the policy is built once the public URL is known.
    let originPolicy: OriginPolicy | undefined;
    const policy = (): OriginPolicy => {
      originPolicy ??= createOriginPolicy({
        ownOrigins: [publicUrl],
        allowedOrigins: options.allowedOrigins ?? [],
      });
      return originPolicy;
    };
    // A malformed allowedOrigins entry fails the start, not the first browser request.
    createOriginPolicy({ ownOrigins: [], allowedOrigins: options.allowedOrigins ?? [] });
    app.addHook(
      'onRequest',
      createCorsHook({
        policy: {
          get origins() {
            return policy().origins;
          },
          check: (origin, host) => policy().check(origin, host),
        },
        paths: CORS_PATHS,
        methods: ['GET', 'POST'],
      }),
    );
    const documents =
      options.clientIdMetadata === false
        ? undefined
        : new ClientIdMetadataResolver({
            ...(options.clock ? { clock: options.clock } : {}),
            ...options.clientIdMetadata,
          });
    if (documents) app.addHook('onClose', () => documents.close());
    await app.register(oauthRoutes, {
      apps: core.apps,
      clients: new OAuthClients(core.apps, documents, KNOWN_SCOPES),
      tokens: core.tokens,
      grants: core.grants,
      transactions: new LoginTransactions(core.db, {
        ttlSeconds: LOGIN_FORM_TTL,
        maxPending: limits.maxPendingLogins,
        perNetwork: limits.pendingLoginsPerNetwork,
        perClient: limits.pendingLoginsPerClient,
        clock: options.clock ?? systemClock,
      }),
      keys: core.keys,
      users: core.service.users,
      roles: core.service.roles,
      resources: core.resources,
      baseUrl: () => publicUrl,
      knownScopes: KNOWN_SCOPES,
      secureCookies: !options.http,
      limits,
      clock: options.clock ?? systemClock,
    });
    await app.register(scimRoutes, {
      prefix: '/scim2',
      service: core.service,
      tokens: core.tokens,
      locations: core.locations,
      heldScopes: (claims) =>
        isUserToken(claims)
          ? currentUserScopes(core.service.roles, claims.sub)
          : new Set(core.apps.get(claims.client_id)?.scopes ?? []),
      onWrite: metrics.countScimWrite,
    });
    app.addHook('onClose', async () => core.db.close());

    const server = await startServer(app, {
      host: options.host ?? '127.0.0.1',
      port: options.port ?? 9443,
      handleSignals: options.handleSignals ?? false,
      closeGraceMs: CLOSE_GRACE_MS,
    });
    publicUrl = (options.publicUrl ?? server.url).replace(/\/+$/, '');
    issuer = options.issuer ?? `${publicUrl}/oauth2/token`;
    return {
      routes,
      url: server.url,
      publicUrl,
      issuer,
      tokenEndpoint: `${publicUrl}/oauth2/token`,
      jwksUri: `${publicUrl}/oauth2/jwks`,
      host: server.host,
      port: server.port,
      bootstrap,
      admin: { apps: core.apps, resources: core.resources, keys: core.keys, service: core.service },
      close: () => server.close(),
    };
  } catch (error) {
    if (core.db.open) core.db.close();
    throw error;
  }
}
