import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  ConfigError,
  compileSchema,
  isJsonObject,
  keyPath,
  type SchemaIssue,
  storedHashProblem,
  stringEnum,
} from '@mcp-identity/common';
import { Type } from '@sinclair/typebox';
import { parse as parseToml } from 'smol-toml';
import {
  DEFAULT_SECRET_ACCESS,
  ENV_NAME,
  resolveSecretRef,
  type SecretAccess,
  secretRefProblem,
} from './control-plane/secret-ref.js';
import { parseDurationMs } from './durations.js';

interface Problem {
  key: string;
  message: string;
  /** Where the value came from, when not from `fail`'s source (an environment variable). */
  source?: string;
}

/** Start-up fails with exit code 2, naming every offending key. */
function fail(problems: Problem[], source: string): never {
  throw new ConfigError(problems.map((p) => ({ source, ...p })));
}

/** How an endpoint of a key manager is trusted: its CA, or (local use only) not at all. */
export interface TlsTrust {
  skipTlsVerify: boolean;
  /** PEM of an extra CA trusted for the endpoint. */
  caCertificate?: string;
}

/** An RFC 7662 introspection endpoint and the gateway's client credentials for it. */
export interface IntrospectionConfig extends TlsTrust {
  endpoint: string;
  clientId: string;
  /** Read from `clientsecretref` at start-up; never logged. */
  clientSecret: string;
  /** Introspect JWTs of this issuer too, instead of verifying them with the JWKS. */
  allTokens: boolean;
  /** Longest time an introspection answer is reused (never beyond the token's `exp`). */
  cacheTtlMs: number;
}

/**
 * A key manager: an issuer whose tokens are verified with its JWKS (`jwksUri`, trusted per the
 * top-level TLS settings), introspected (RFC 7662), or both: JWTs by the JWKS, others by
 * introspection.
 */
export interface KeyManagerConfig extends TlsTrust {
  name: string;
  issuer: string;
  jwksUri?: string;
  introspection?: IntrospectionConfig;
}

export interface JwtSettings {
  leewaySeconds: number;
  jwksCacheTtlMs: number;
  /** One JWKS request, connection included. */
  jwksFetchTimeoutMs: number;
  /** How many times the wait after a failed fetch doubles (see `JwksCache`). */
  jwksFetchRetries: number;
  /** The wait after a failed JWKS fetch. */
  jwksFetchRetryIntervalMs: number;
  /** Minimum time between the starts of two JWKS fetches (unknown `kid`, refresh, retry). */
  jwksRefreshCooldownMs: number;
  tokenCacheMaxEntries: number;
  tokenCacheTtlMs: number;
  /** Introspection requests (tokens not cached) per client address per minute; 10× per network. */
  introspectionsPerMinute: number;
}

export interface ManagementUser {
  username: string;
  /** `scrypt$...` hash as produced by `gateway hash-password`. */
  passwordHash: string;
  roles: string[];
}

export interface GatewayConfig {
  host: string;
  managementHost: string;
  ports: { https: number; http: number; management: number };
  tls?: { certPath: string; keyPath: string };
  dataDir: string;
  /**
   * Public address used in protected resource metadata and challenges on every listener (a load
   * balancer's URL); without it, each listener's own loopback address.
   */
  gatewayUrl?: string;
  keyManagers: KeyManagerConfig[];
  jwt: JwtSettings;
  managementUsers: ManagementUser[];
  limits: {
    maxRequestBodyBytes: number;
    maxInflightRequestBytes: number;
    /** Upstream answers buffered to be filtered at once, all proxies (`ByteBudget`). */
    maxBufferedAnswerBytes: number;
    idleTimeoutMs: number;
    /** Per proxy: connections to its upstream, and the queue behind them. */
    upstreamConnections: number;
    upstreamQueueLength: number;
    upstreamQueueTimeoutMs: number;
  };
  /** Browser origins allowed on `/mcp` besides the gateway's own and loopback ones. */
  allowedOrigins: string[];
  /** PostgreSQL shared by every instance; without `url`, SQLite in the data directory. */
  database: { url?: string; reconcileIntervalMs: number };
  /**
   * Where `mcp-ratelimit` counts: one Redis shared by every instance, or without it this
   * instance (its primary, with `--workers`).
   */
  rateLimit: { redisUrl?: string };
  /** What a proxy's `upstream.auth.secretRef` may read. */
  secrets: SecretAccess;
  logLevel: string;
}

const duration = Type.Union([Type.Number({ minimum: 0 }), Type.String()]);
const port = Type.Integer({ minimum: 0, maximum: 65535 });
const str = Type.String({ minLength: 1 });
const closed = { additionalProperties: false } as const;

const httpUrl = Type.String({ pattern: '^https?://' });
const tlsTrust = {
  skiptlsverify: Type.Optional(Type.Boolean()),
  certificatepath: Type.Optional(str),
};

const keyManager = Type.Object({
  name: str,
  issuer: str,
  jwks: Type.Optional(Type.Object({ remote: Type.Object({ uri: httpUrl, ...tlsTrust }, closed) })),
  introspection: Type.Optional(
    Type.Object(
      {
        endpoint: httpUrl,
        clientid: str,
        // A reference (env:NAME, file:/path), never the secret itself in a shared file.
        clientsecretref: str,
        alltokens: Type.Optional(Type.Boolean()),
        cachettl: Type.Optional(duration),
        ...tlsTrust,
      },
      closed,
    ),
  ),
});

/** Schema of the lower-cased TOML document. Unknown top-level sections are rejected. */
const CONFIG_SCHEMA = Type.Partial(
  Type.Object(
    {
      data_dir: str,
      log_level: stringEnum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
      listeners: Type.Partial(
        Type.Object(
          {
            host: str,
            management_host: str,
            https_port: port,
            http_port: port,
            management_port: port,
            allowed_origins: Type.Array(Type.String({ pattern: '^https?://[^/]+$' })),
          },
          closed,
        ),
      ),
      tls: Type.Object({ cert: str, key: str }, closed),
      limits: Type.Partial(
        Type.Object(
          {
            max_request_body_bytes: Type.Integer({ minimum: 1 }),
            max_inflight_request_bytes: Type.Integer({ minimum: 1 }),
            max_buffered_answer_bytes: Type.Integer({ minimum: 1 }),
            idle_timeout: duration,
            upstream_connections: Type.Integer({ minimum: 1 }),
            upstream_queue_length: Type.Integer({ minimum: 0 }),
            upstream_queue_timeout: duration,
          },
          closed,
        ),
      ),
      database: Type.Partial(
        Type.Object(
          { url: Type.String({ pattern: '^postgres(ql)?://' }), reconcile_interval: duration },
          closed,
        ),
      ),
      ratelimit: Type.Partial(
        Type.Object({ redis_url: Type.String({ pattern: '^rediss?://' }) }, closed),
      ),
      secrets: Type.Partial(
        Type.Object(
          {
            env_prefixes: Type.Array(Type.String({ pattern: ENV_NAME.source })),
            directory: str,
          },
          closed,
        ),
      ),
      management: Type.Partial(
        Type.Object(
          {
            users: Type.Array(
              Type.Object(
                {
                  username: str,
                  // Its format is checked by `checkValues` (common's `storedHashProblem`).
                  password_hash: Type.String(),
                  roles: Type.Array(str),
                },
                closed,
              ),
            ),
          },
          closed,
        ),
      ),
      policy_configurations: Type.Partial(
        Type.Object({
          mcpauth_v1: Type.Partial(
            Type.Object({ gatewayurl: Type.String({ pattern: '^https?://' }) }),
          ),
          jwtauth_v1: Type.Partial(
            Type.Object({
              leeway: duration,
              jwkscachettl: duration,
              jwksfetchtimeout: duration,
              jwksfetchretrycount: Type.Integer({ minimum: 0, maximum: 10 }),
              jwksfetchretryinterval: duration,
              jwksrefreshcooldown: duration,
              tokencachettl: duration,
              cachemaxsize: Type.Integer({ minimum: 0 }),
              introspectionsperminute: Type.Integer({ minimum: 1 }),
              keymanagers: Type.Array(keyManager),
            }),
          ),
        }),
      ),
    },
    closed,
  ),
);

const CONFIG_DOCUMENT = compileSchema(CONFIG_SCHEMA);

/**
 * Keys the environment may set, over the file (flags > environment > file > defaults); URLs
 * with passwords and deployment paths belong in the environment rather than in a shared file.
 */
const ENVIRONMENT: ReadonlyArray<
  [variable: string, keys: [string, string], read: (v: string) => unknown]
> = [
  ['GATEWAY_RATELIMIT_REDIS_URL', ['ratelimit', 'redis_url'], (v) => v],
  [
    'GATEWAY_SECRETS_ENV_PREFIXES',
    ['secrets', 'env_prefixes'],
    (v) =>
      v
        .split(',')
        .map((prefix) => prefix.trim())
        .filter((prefix) => prefix !== ''),
  ],
  // Relative to the working directory, as any path given to a process.
  ['GATEWAY_SECRETS_DIR', ['secrets', 'directory'], (v) => path.resolve(v)],
];

/** Variables the gateway reads for itself: no `secretRef` may reach them. */
const OWN_VARIABLES = ['GATEWAY_DATABASE_URL', ...ENVIRONMENT.map(([variable]) => variable)];

/** Puts the environment's settings into the (lower-cased) document; where each came from. */
function applyEnvironment(doc: unknown, env: NodeJS.ProcessEnv): Map<string, string> {
  const sources = new Map<string, string>();
  if (!isJsonObject(doc)) return sources;
  for (const [variable, [section, key], read] of ENVIRONMENT) {
    const value = env[variable];
    if (value === undefined || value === '') continue;
    const table = isJsonObject(doc[section]) ? doc[section] : {};
    table[key] = read(value) as never;
    doc[section] = table;
    sources.set(`${section}.${key}`, `environment variable ${variable}`);
  }
  return sources;
}

/** Lower-cases every key at every depth (WSO2 documents the same keys in two spellings). */
function lowerCaseKeys(value: unknown, at: string, problems: Problem[]): unknown {
  if (Array.isArray(value))
    return value.map((item, i) => lowerCaseKeys(item, `${at}[${i}]`, problems));
  if (value === null || typeof value !== 'object' || value instanceof Date) return value;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    const lower = key.toLowerCase();
    const childPath = at ? `${at}.${lower}` : lower;
    if (Object.hasOwn(out, lower))
      problems.push({ key: childPath, message: 'given more than once' });
    out[lower] = lowerCaseKeys(child, childPath, problems);
  }
  return out;
}

function describe(issue: SchemaIssue): Problem {
  return { key: keyPath(issue.path) || '(root)', message: issue.message };
}

/** The value at `keys` of nested tables, for the checks that also run on an invalid document. */
function lookup(value: unknown, ...keys: string[]): unknown {
  return keys.reduce<unknown>((at, key) => (isJsonObject(at) ? at[key] : undefined), value);
}

function durationMs(value: unknown, fallback: number): number {
  return value === undefined ? fallback : (parseDurationMs(value) ?? fallback);
}

const DURATION_KEYS = [
  ['limits', 'idle_timeout'],
  ['limits', 'upstream_queue_timeout'],
  ['database', 'reconcile_interval'],
  ...[
    'leeway',
    'jwkscachettl',
    'jwksfetchtimeout',
    'jwksfetchretryinterval',
    'jwksrefreshcooldown',
    'tokencachettl',
  ].map((key) => ['policy_configurations', 'jwtauth_v1', key]),
];

/**
 * What the schema cannot say: durations, the reconcile floor, the in-flight cap, password hashes,
 * unique names.
 */
function checkValues(doc: unknown, problems: Problem[]): void {
  for (const keys of DURATION_KEYS) {
    const value = lookup(doc, ...keys);
    if (value !== undefined && parseDurationMs(value) === undefined) {
      problems.push({
        key: keys.join('.'),
        message: 'must be a duration such as 30s, 5m or 500ms',
      });
    }
  }
  const reconcile = lookup(doc, 'database', 'reconcile_interval');
  if (reconcile !== undefined && (parseDurationMs(reconcile) ?? 100) < 100) {
    problems.push({ key: 'database.reconcile_interval', message: 'must be at least 100ms' });
  }
  const inflight = lookup(doc, 'limits', 'max_inflight_request_bytes');
  const body = lookup(doc, 'limits', 'max_request_body_bytes');
  if (typeof inflight === 'number' && inflight < (typeof body === 'number' ? body : 1024 * 1024)) {
    problems.push({
      key: 'limits.max_inflight_request_bytes',
      message:
        'must be at least limits.max_request_body_bytes (or no body of that size could ever be read)',
    });
  }
  const prefixes = lookup(doc, 'secrets', 'env_prefixes');
  (Array.isArray(prefixes) ? prefixes : []).forEach((prefix: unknown, i) => {
    const own = OWN_VARIABLES.find(
      (variable) => typeof prefix === 'string' && variable.startsWith(prefix),
    );
    if (own) {
      problems.push({
        key: `secrets.env_prefixes[${i}]`,
        message: `would let a secretRef read ${own}, the gateway's own configuration`,
      });
    }
  });
  const users = lookup(doc, 'management', 'users');
  (Array.isArray(users) ? users : []).forEach((user: unknown, i) => {
    // A placeholder (the guide's `scrypt$...`) would start and then refuse every login.
    const hash = lookup(user, 'password_hash');
    const problem = typeof hash === 'string' ? storedHashProblem(hash) : undefined;
    if (problem) problems.push({ key: `management.users[${i}].password_hash`, message: problem });
  });
  const managers = lookup(doc, 'policy_configurations', 'jwtauth_v1', 'keymanagers');
  const names = new Set<string>();
  (Array.isArray(managers) ? managers : []).forEach((km: unknown, i) => {
    const at = `policy_configurations.jwtauth_v1.keymanagers[${i}]`;
    if (isJsonObject(km) && km.jwks === undefined && km.introspection === undefined) {
      problems.push({ key: at, message: 'needs jwks.remote or introspection (or both)' });
    }
    const ttl = lookup(km, 'introspection', 'cachettl');
    if (ttl !== undefined && parseDurationMs(ttl) === undefined) {
      problems.push({
        key: `${at}.introspection.cachettl`,
        message: 'must be a duration such as 30s, 5m or 500ms',
      });
    }
    const name = lookup(km, 'name');
    if (typeof name === 'string') {
      if (names.has(name)) {
        problems.push({
          key: `${at}.name`,
          message: 'duplicate name',
        });
      }
      names.add(name);
    }
  });
}

/**
 * Validates a configuration document (as parsed from TOML, any key spelling) and resolves it
 * with defaults. Relative paths are resolved against `baseDir`. Every problem is reported at
 * once, each naming its key.
 */
export function resolveConfig(
  raw: unknown,
  options: {
    baseDir?: string;
    dataDir?: string;
    databaseUrl?: string;
    source?: string;
    /** Read for the `GATEWAY_RATELIMIT_*` and `GATEWAY_SECRETS_*` settings; default `process.env`. */
    env?: NodeJS.ProcessEnv;
  } = {},
): GatewayConfig {
  const source = options.source ?? 'configuration';
  const problems: Problem[] = [];
  if (options.databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(options.databaseUrl)) {
    fail(
      [{ key: 'database.url', message: 'must be a postgres:// or postgresql:// URL' }],
      '--database-url or GATEWAY_DATABASE_URL',
    );
  }
  const doc = lowerCaseKeys(raw ?? {}, '', problems);
  const fromEnvironment = applyEnvironment(doc, options.env ?? process.env);
  const valid = CONFIG_DOCUMENT.is(doc);
  if (!valid) problems.push(...CONFIG_DOCUMENT.issues(doc).map(describe));
  checkValues(doc, problems);
  for (const problem of problems) {
    const [section, key] = problem.key.split(/[.[]/);
    const variable = fromEnvironment.get(`${section}.${key}`);
    if (variable) problem.source = variable;
  }
  if (!valid || problems.length > 0) fail(problems, source);

  const baseDir = options.baseDir ?? process.cwd();
  const resolvePath = (p: string) => path.resolve(baseDir, p);
  const { listeners, limits, tls, database, ratelimit, secrets } = doc;
  const secretAccess: SecretAccess = {
    envPrefixes: secrets?.env_prefixes ?? DEFAULT_SECRET_ACCESS.envPrefixes,
  };
  if (secrets?.directory) secretAccess.directory = resolvePath(secrets.directory);

  const trust = (
    settings: { skiptlsverify?: boolean; certificatepath?: string },
    key: string,
  ): TlsTrust => {
    const trusted: TlsTrust = { skipTlsVerify: settings.skiptlsverify === true };
    if (settings.certificatepath !== undefined) {
      const caPath = resolvePath(settings.certificatepath);
      try {
        trusted.caCertificate = readFileSync(caPath, 'utf8');
      } catch {
        fail([{ key: `${key}.certificatepath`, message: `cannot read ${caPath}` }], source);
      }
    }
    return trusted;
  };
  const jwt = doc.policy_configurations?.jwtauth_v1;
  const keyManagers = (jwt?.keymanagers ?? []).map((km, i): KeyManagerConfig => {
    const at = `policy_configurations.jwtauth_v1.keymanagers[${i}]`;
    const remote = km.jwks?.remote;
    const manager: KeyManagerConfig = {
      name: km.name,
      issuer: km.issuer,
      ...(remote ? trust(remote, `${at}.jwks.remote`) : { skipTlsVerify: false }),
    };
    if (remote) manager.jwksUri = remote.uri;
    if (km.introspection) {
      const introspectionAt = `${at}.introspection`;
      manager.introspection = {
        ...introspectionOf(km.introspection, introspectionAt, secretAccess, source),
        ...trust(km.introspection, introspectionAt),
      };
    }
    return manager;
  });

  const users = (doc.management?.users ?? []).map((u) => ({
    username: u.username,
    passwordHash: u.password_hash,
    roles: u.roles,
  }));
  const dataDir = options.dataDir ?? doc.data_dir ?? '.data/gateway';
  const gatewayUrl = doc.policy_configurations?.mcpauth_v1?.gatewayurl;
  const databaseUrl = options.databaseUrl ?? database?.url;

  const config: GatewayConfig = {
    // Loopback unless configured: exposing the proxies on the network is a deliberate choice.
    host: listeners?.host ?? '127.0.0.1',
    managementHost: listeners?.management_host ?? '127.0.0.1',
    ports: {
      https: listeners?.https_port ?? 8443,
      http: listeners?.http_port ?? 8080,
      management: listeners?.management_port ?? 9090,
    },
    dataDir: resolvePath(dataDir),
    keyManagers,
    jwt: {
      leewaySeconds: durationMs(jwt?.leeway, 30_000) / 1000,
      jwksCacheTtlMs: durationMs(jwt?.jwkscachettl, 300_000),
      jwksFetchTimeoutMs: durationMs(jwt?.jwksfetchtimeout, 3_000),
      jwksFetchRetries: jwt?.jwksfetchretrycount ?? 2,
      jwksFetchRetryIntervalMs: durationMs(jwt?.jwksfetchretryinterval, 500),
      jwksRefreshCooldownMs: durationMs(jwt?.jwksrefreshcooldown, 300),
      tokenCacheMaxEntries: jwt?.cachemaxsize ?? 10_000,
      tokenCacheTtlMs: durationMs(jwt?.tokencachettl, 300_000),
      introspectionsPerMinute: jwt?.introspectionsperminute ?? 60,
    },
    managementUsers: users,
    allowedOrigins: listeners?.allowed_origins ?? [],
    limits: {
      maxRequestBodyBytes: limits?.max_request_body_bytes ?? 1024 * 1024,
      maxInflightRequestBytes: limits?.max_inflight_request_bytes ?? 64 * 1024 * 1024,
      maxBufferedAnswerBytes: limits?.max_buffered_answer_bytes ?? 128 * 1024 * 1024,
      idleTimeoutMs: durationMs(limits?.idle_timeout, 300_000),
      upstreamConnections: limits?.upstream_connections ?? 128,
      upstreamQueueLength: limits?.upstream_queue_length ?? 128,
      upstreamQueueTimeoutMs: durationMs(limits?.upstream_queue_timeout, 5_000),
    },
    database: { reconcileIntervalMs: durationMs(database?.reconcile_interval, 5_000) },
    rateLimit: {},
    secrets: secretAccess,
    logLevel: doc.log_level ?? process.env.LOG_LEVEL ?? 'info',
  };
  if (databaseUrl) config.database.url = databaseUrl;
  if (ratelimit?.redis_url) config.rateLimit.redisUrl = ratelimit.redis_url;
  if (tls) config.tls = { certPath: resolvePath(tls.cert), keyPath: resolvePath(tls.key) };
  if (gatewayUrl) config.gatewayUrl = gatewayUrl.replace(/\/+$/, '');
  return config;
}

/**
 * What the operator's own file may reference: any variable, any absolute file. (The allow-list
 * in `[secrets]` guards what management API administrators choose; this file is the operator's.)
 */
const OPERATOR_SECRET_ACCESS: SecretAccess = {
  envPrefixes: [''],
  directory: path.parse(process.cwd()).root,
};

/** A key manager's introspection settings, its client secret read through its reference. */
function introspectionOf(
  settings: {
    endpoint: string;
    clientid: string;
    clientsecretref: string;
    alltokens?: boolean;
    cachettl?: number | string;
  },
  at: string,
  secretAccess: SecretAccess,
  source: string,
): Omit<IntrospectionConfig, keyof TlsTrust> {
  const key = `${at}.clientsecretref`;
  const ref = settings.clientsecretref;
  // A secret a proxy's `upstream.auth.secretRef` could also read could be sent to any upstream
  // a management administrator deploys: the gateway's own credential stays out of their reach.
  if (secretRefProblem(ref, secretAccess, false) === undefined) {
    fail(
      [
        {
          key,
          message:
            "a proxy's upstream.auth.secretRef may read it too (secrets.env_prefixes, secrets.directory): " +
            'use a variable or file outside them',
        },
      ],
      source,
    );
  }
  const secret = resolveSecretRef(ref, OPERATOR_SECRET_ACCESS);
  if (!secret.ok) fail([{ key, message: secret.problem }], source);
  return {
    endpoint: settings.endpoint,
    clientId: settings.clientid,
    clientSecret: secret.value,
    allTokens: settings.alltokens === true,
    cacheTtlMs: durationMs(settings.cachettl, 60_000),
  };
}

/** Reads and resolves a TOML configuration file. */
export function loadConfigFile(
  file: string,
  options: { dataDir?: string; databaseUrl?: string } = {},
): GatewayConfig {
  const source = `file ${file}`;
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    fail([{ key: '--config', message: 'cannot read the file' }], source);
  }
  let raw: unknown;
  try {
    raw = parseToml(text);
  } catch (error) {
    fail([{ key: '(file)', message: `not valid TOML: ${(error as Error).message}` }], source);
  }
  return resolveConfig(raw, { baseDir: path.dirname(path.resolve(file)), source, ...options });
}
