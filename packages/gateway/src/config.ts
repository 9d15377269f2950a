import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '@mcp-identity/common';
import { Ajv, type ErrorObject } from 'ajv';
import { parse as parseToml } from 'smol-toml';
import { parseDurationMs } from './durations.js';

interface Problem {
  key: string;
  message: string;
}

/** Start-up fails with exit code 2, naming every offending key. */
function fail(problems: Problem[], source: string): never {
  throw new ConfigError(problems.map((p) => ({ ...p, source })));
}

export interface KeyManagerConfig {
  name: string;
  issuer: string;
  jwksUri: string;
  skipTlsVerify: boolean;
  /** PEM of an extra CA trusted for the JWKS endpoint. */
  caCertificate?: string;
}

export interface JwtSettings {
  leewaySeconds: number;
  jwksCacheTtlMs: number;
  jwksFetchTimeoutMs: number;
  jwksFetchRetries: number;
  jwksFetchRetryIntervalMs: number;
  /** Minimum time between two JWKS refetches triggered by an unknown `kid`. */
  jwksRefreshCooldownMs: number;
  tokenCacheMaxEntries: number;
  tokenCacheTtlMs: number;
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
  /** Public HTTPS address used in protected resource metadata; defaults to the HTTPS listener. */
  gatewayUrl?: string;
  keyManagers: KeyManagerConfig[];
  jwt: JwtSettings;
  managementUsers: ManagementUser[];
  limits: { maxRequestBodyBytes: number; maxInflightRequestBytes: number; idleTimeoutMs: number };
  /** Browser origins allowed on `/mcp` besides the gateway's own and loopback ones. */
  allowedOrigins: string[];
  logLevel: string;
}

const duration = { anyOf: [{ type: 'number', minimum: 0 }, { type: 'string' }] };
const port = { type: 'integer', minimum: 0, maximum: 65535 };
const str = { type: 'string', minLength: 1 };

/** Schema of the lower-cased TOML document. Unknown top-level sections are rejected. */
const CONFIG_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    data_dir: str,
    log_level: { enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] },
    listeners: {
      type: 'object',
      additionalProperties: false,
      properties: {
        host: str,
        management_host: str,
        https_port: port,
        http_port: port,
        management_port: port,
        allowed_origins: { type: 'array', items: { type: 'string', pattern: '^https?://[^/]+$' } },
      },
    },
    tls: {
      type: 'object',
      additionalProperties: false,
      required: ['cert', 'key'],
      properties: { cert: str, key: str },
    },
    limits: {
      type: 'object',
      additionalProperties: false,
      properties: {
        max_request_body_bytes: { type: 'integer', minimum: 1 },
        max_inflight_request_bytes: { type: 'integer', minimum: 1 },
        idle_timeout: duration,
      },
    },
    management: {
      type: 'object',
      additionalProperties: false,
      properties: {
        users: {
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['username', 'password_hash', 'roles'],
            properties: {
              username: str,
              password_hash: { type: 'string', pattern: '^scrypt\\$' },
              roles: { type: 'array', items: str },
            },
          },
        },
      },
    },
    policy_configurations: {
      type: 'object',
      properties: {
        mcpauth_v1: {
          type: 'object',
          properties: { gatewayurl: { type: 'string', pattern: '^https?://' } },
        },
        jwtauth_v1: {
          type: 'object',
          properties: {
            leeway: duration,
            jwkscachettl: duration,
            jwksfetchtimeout: duration,
            jwksfetchretrycount: { type: 'integer', minimum: 0, maximum: 10 },
            jwksfetchretryinterval: duration,
            jwksrefreshcooldown: duration,
            tokencachettl: duration,
            cachemaxsize: { type: 'integer', minimum: 0 },
            keymanagers: {
              type: 'array',
              items: {
                type: 'object',
                required: ['name', 'issuer', 'jwks'],
                properties: {
                  name: str,
                  issuer: str,
                  jwks: {
                    type: 'object',
                    required: ['remote'],
                    properties: {
                      remote: {
                        type: 'object',
                        additionalProperties: false,
                        required: ['uri'],
                        properties: {
                          uri: { type: 'string', pattern: '^https?://' },
                          skiptlsverify: { type: 'boolean' },
                          certificatepath: str,
                        },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
  },
} as const;

const ajv = new Ajv({ allErrors: true, strict: false });
const validateConfig = ajv.compile(CONFIG_SCHEMA);

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

/** `/a/b/0/c` → `a.b[0].c` */
function toKeyPath(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce(
      (acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : acc ? `${acc}.${part}` : part),
      '',
    );
}

function describe(error: ErrorObject): Problem {
  const key = toKeyPath(error.instancePath);
  const child = (name: string) => (key ? `${key}.${name}` : name);
  if (error.keyword === 'additionalProperties') {
    const extra = (error.params as { additionalProperty: string }).additionalProperty;
    return { key: child(extra), message: 'unknown key' };
  }
  if (error.keyword === 'required') {
    const missing = (error.params as { missingProperty: string }).missingProperty;
    return { key: child(missing), message: 'is required' };
  }
  return { key: key || '(root)', message: error.message ?? 'is invalid' };
}

type Doc = Record<string, Record<string, unknown> | undefined>;

function durationMs(value: unknown, fallback: number): number {
  return value === undefined ? fallback : (parseDurationMs(value) ?? fallback);
}

function checkDurations(doc: Doc, problems: Problem[]): void {
  const entries: Array<[string, unknown]> = [['limits.idle_timeout', doc.limits?.idle_timeout]];
  const jwt = (doc.policy_configurations?.jwtauth_v1 ?? {}) as Record<string, unknown>;
  for (const key of [
    'leeway',
    'jwkscachettl',
    'jwksfetchtimeout',
    'jwksfetchretryinterval',
    'jwksrefreshcooldown',
    'tokencachettl',
  ]) {
    entries.push([`policy_configurations.jwtauth_v1.${key}`, jwt[key]]);
  }
  for (const [key, value] of entries) {
    if (value !== undefined && parseDurationMs(value) === undefined) {
      problems.push({ key, message: 'must be a duration such as 30s, 5m or 500ms' });
    }
  }
}

/**
 * Validates a configuration document (as parsed from TOML, any key spelling) and resolves it
 * with defaults. Relative paths are resolved against `baseDir`. Every problem is reported at
 * once, each naming its key.
 */
export function resolveConfig(
  raw: unknown,
  options: { baseDir?: string; dataDir?: string; source?: string } = {},
): GatewayConfig {
  const source = options.source ?? 'configuration';
  const problems: Problem[] = [];
  const doc = lowerCaseKeys(raw ?? {}, '', problems) as Doc;
  if (!validateConfig(doc)) problems.push(...(validateConfig.errors ?? []).map(describe));
  checkDurations(doc, problems);
  const rawLimits = (doc.limits ?? {}) as Record<string, unknown>;
  if (
    typeof rawLimits.max_inflight_request_bytes === 'number' &&
    rawLimits.max_inflight_request_bytes <
      ((rawLimits.max_request_body_bytes as number) ?? 1024 * 1024)
  ) {
    problems.push({
      key: 'limits.max_inflight_request_bytes',
      message:
        'must be at least limits.max_request_body_bytes (or no body of that size could ever be read)',
    });
  }
  const jwt = (doc.policy_configurations?.jwtauth_v1 ?? {}) as Record<string, unknown>;
  const rawManagers = (Array.isArray(jwt.keymanagers) ? jwt.keymanagers : []) as Array<
    Record<string, unknown>
  >;
  const names = new Set<string>();
  rawManagers.forEach((km, i) => {
    if (typeof km.name === 'string') {
      if (names.has(km.name)) {
        problems.push({
          key: `policy_configurations.jwtauth_v1.keymanagers[${i}].name`,
          message: 'duplicate name',
        });
      }
      names.add(km.name);
    }
  });
  if (problems.length > 0) fail(problems, source);

  const baseDir = options.baseDir ?? process.cwd();
  const resolvePath = (p: string) => path.resolve(baseDir, p);
  const keyManagers = rawManagers.map((km, i): KeyManagerConfig => {
    const remote = (km.jwks as { remote: Record<string, unknown> }).remote;
    const manager: KeyManagerConfig = {
      name: km.name as string,
      issuer: km.issuer as string,
      jwksUri: remote.uri as string,
      skipTlsVerify: remote.skiptlsverify === true,
    };
    if (typeof remote.certificatepath === 'string') {
      const caPath = resolvePath(remote.certificatepath);
      try {
        manager.caCertificate = readFileSync(caPath, 'utf8');
      } catch {
        const key = `policy_configurations.jwtauth_v1.keymanagers[${i}].jwks.remote.certificatepath`;
        fail([{ key, message: `cannot read ${caPath}` }], source);
      }
    }
    return manager;
  });

  const listeners = (doc.listeners ?? {}) as Record<string, unknown>;
  const limits = (doc.limits ?? {}) as Record<string, unknown>;
  const tls = doc.tls as { cert: string; key: string } | undefined;
  const users = ((doc.management?.users ?? []) as Array<Record<string, unknown>>).map((u) => ({
    username: u.username as string,
    passwordHash: u.password_hash as string,
    roles: u.roles as string[],
  }));
  const dataDir = options.dataDir ?? (doc.data_dir as string | undefined) ?? '.data/gateway';
  const gatewayUrl = doc.policy_configurations?.mcpauth_v1 as { gatewayurl?: string } | undefined;

  const config: GatewayConfig = {
    // Loopback unless configured: exposing the proxies on the network is a deliberate choice.
    host: (listeners.host as string | undefined) ?? '127.0.0.1',
    managementHost: (listeners.management_host as string | undefined) ?? '127.0.0.1',
    ports: {
      https: (listeners.https_port as number | undefined) ?? 8443,
      http: (listeners.http_port as number | undefined) ?? 8080,
      management: (listeners.management_port as number | undefined) ?? 9090,
    },
    dataDir: resolvePath(dataDir),
    keyManagers,
    jwt: {
      leewaySeconds: durationMs(jwt.leeway, 30_000) / 1000,
      jwksCacheTtlMs: durationMs(jwt.jwkscachettl, 300_000),
      jwksFetchTimeoutMs: durationMs(jwt.jwksfetchtimeout, 5_000),
      jwksFetchRetries: (jwt.jwksfetchretrycount as number | undefined) ?? 2,
      jwksFetchRetryIntervalMs: durationMs(jwt.jwksfetchretryinterval, 500),
      jwksRefreshCooldownMs: durationMs(jwt.jwksrefreshcooldown, 10_000),
      tokenCacheMaxEntries: (jwt.cachemaxsize as number | undefined) ?? 10_000,
      tokenCacheTtlMs: durationMs(jwt.tokencachettl, 300_000),
    },
    managementUsers: users,
    allowedOrigins: (listeners.allowed_origins as string[] | undefined) ?? [],
    limits: {
      maxRequestBodyBytes: (limits.max_request_body_bytes as number | undefined) ?? 1024 * 1024,
      maxInflightRequestBytes:
        (limits.max_inflight_request_bytes as number | undefined) ?? 64 * 1024 * 1024,
      idleTimeoutMs: durationMs(limits.idle_timeout, 300_000),
    },
    logLevel: (doc.log_level as string | undefined) ?? process.env.LOG_LEVEL ?? 'info',
  };
  if (tls) config.tls = { certPath: resolvePath(tls.cert), keyPath: resolvePath(tls.key) };
  if (gatewayUrl?.gatewayurl) config.gatewayUrl = gatewayUrl.gatewayurl.replace(/\/+$/, '');
  return config;
}

/** Reads and resolves a TOML configuration file. */
export function loadConfigFile(file: string, options: { dataDir?: string } = {}): GatewayConfig {
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
