import {
  type ClientIdMetadataOptions,
  InvalidArgumentError,
  memoryThrottles,
  type ThrottleFactory,
} from '@mcp-identity/common';
import type { Clock } from './clock.js';
import { systemClock } from './clock.js';
import type { OAuthStore } from './store.js';
import { MemoryOAuthStore } from './store.js';

/** Why the host's login operation refused the credentials; drives the re-rendered message. */
export type LoginFailureReason =
  | 'invalid_credentials'
  | 'locked'
  | 'disabled'
  | 'password_expired'
  | (string & {});

export type LoginResult = { ok: true; userId: string } | { ok: false; reason: LoginFailureReason };

/**
 * The host application's own e-mail and password login operation, called with remember-me
 * false: it must verify the credentials and must not start a persistent session.
 */
export type LoginHook = (credentials: { email: string; password: string }) => Promise<LoginResult>;

/** What the host still grants a subject; `scopes` caps the scopes of the tokens issued. */
export type SubjectStatus = { active: true; scopes: readonly string[] } | { active: false };

/**
 * The host's re-check of a grant's subject, called on every token request (code exchange and
 * refresh) before anything is issued: a removed or disabled account gets `invalid_grant`, and
 * the grant's scope is narrowed to `scopes` (never widened).
 */
export type CheckSubjectHook = (subject: {
  userId: string;
  clientId: string;
}) => Promise<SubjectStatus>;

export interface AccessTokenRequest {
  userId: string;
  clientId: string;
  /** Always `mcp:tools` for tokens issued by this authorization server. */
  scope: string;
  /** `<issuer>/mcp`. */
  audience: string;
  issuer: string;
}

/** The host's token generation operation: a signed JWT carrying the given claims and a `jti`. */
export type IssueAccessTokenHook = (
  request: AccessTokenRequest,
) => Promise<{ token: string; expiresIn: number }>;

export interface OAuthLimits {
  /**
   * Live (unexpired) dynamic clients. Beyond it a registration evicts the oldest never-used
   * client of the network holding the most; 503 only when every live client has been used.
   */
  maxClients: number;
  /** Registrations per client IP per hour; 429 beyond it. */
  registrationsPerIpPerHour: number;
  /** Registrations per client network (IPv4 /24, IPv6 /64) per hour; 429 beyond it. */
  registrationsPerNetworkPerHour: number;
  /**
   * Login forms awaiting submission. Beyond it a new form evicts the oldest form of the network
   * holding the most (never a 503: the cap bounds memory, it is not a switch).
   */
  maxPendingAuthorizations: number;
  /** Pending forms of one network; beyond it that network's oldest form goes. */
  pendingAuthorizationsPerNetwork: number;
  /** Pending forms of one client; beyond it the client's oldest form from its heaviest network goes. */
  pendingAuthorizationsPerClient: number;
  /** Authorize requests (GET and POST) per client IP per minute; 429 beyond it. */
  authorizeRequestsPerIpPerMinute: number;
  /** Authorize requests per client network per minute; 429 beyond it. */
  authorizeRequestsPerNetworkPerMinute: number;
  /** Token requests per client IP per minute; 429 beyond it. */
  tokenRequestsPerIpPerMinute: number;
  /** Failed logins per account (e-mail) before further attempts are refused for the window. */
  loginFailuresPerAccount: number;
  /** Failed logins per client IP before further attempts are refused for the window. */
  loginFailuresPerIp: number;
  /** Length of the login throttling window. */
  loginThrottleWindowSeconds: number;
}

export const DEFAULT_LIMITS: OAuthLimits = {
  maxClients: 10_000,
  registrationsPerIpPerHour: 20,
  registrationsPerNetworkPerHour: 100,
  maxPendingAuthorizations: 10_000,
  pendingAuthorizationsPerNetwork: 1_000,
  pendingAuthorizationsPerClient: 2_000,
  authorizeRequestsPerIpPerMinute: 120,
  authorizeRequestsPerNetworkPerMinute: 600,
  tokenRequestsPerIpPerMinute: 600,
  loginFailuresPerAccount: 5,
  loginFailuresPerIp: 20,
  loginThrottleWindowSeconds: 15 * 60,
};

export interface OAuthServerOptions {
  login: LoginHook;
  issueAccessToken: IssueAccessTokenHook;
  checkSubject: CheckSubjectHook;
  /** Fixed issuer, e.g. `https://mcp.example.com`; otherwise derived from each request. */
  publicUrl?: string;
  /** Honour `X-Forwarded-Proto/Host/Prefix` when deriving the issuer. Off by default. */
  trustProxy?: boolean;
  /**
   * Public keys of the access-token signer. When given, they are served at
   * `<issuer>/oauth/jwks` and advertised as `jwks_uri`.
   */
  jwks?: () => Promise<{ keys: object[] }>;
  /** Shown on the login page. */
  applicationName?: string;
  store?: OAuthStore;
  /**
   * Where the rate limits and login throttles count. Default: process memory; instances
   * behind a load balancer share one Redis (`createRedisThrottles`).
   */
  throttles?: ThrottleFactory;
  clock?: Clock;
  limits?: Partial<OAuthLimits>;
  /** Lifetime of refresh tokens (each rotation starts a new one). Default 14 days. */
  refreshTokenTtlSeconds?: number;
  /**
   * How long after a refresh token's rotation a request presenting it again counts as
   * concurrent with the rotation (refused, the family kept) instead of as a replay (the family
   * revoked, RFC 9700 §4.14.2). Default 2 s; 0 keeps only requests that arrived before the
   * rotation.
   */
  refreshTokenRaceWindowSeconds?: number;
  /**
   * Client ID Metadata Documents: a client whose `client_id` is an HTTPS URL is described by the
   * document there, fetched by common's SSRF-safe resolver (its options: a development
   * allowance for private addresses, extra CAs, size, time and cache bounds). On by default;
   * `false` turns it off (and it is then not advertised).
   */
  clientIdMetadata?: ClientIdMetadataOptions | false;
}

export interface ResolvedOptions {
  login: LoginHook;
  issueAccessToken: IssueAccessTokenHook;
  checkSubject: CheckSubjectHook;
  jwks: (() => Promise<{ keys: object[] }>) | undefined;
  applicationName: string;
  store: OAuthStore;
  throttles: ThrottleFactory;
  clock: Clock;
  limits: OAuthLimits;
  refreshTokenTtlMs: number;
  refreshTokenRaceWindowMs: number;
}

export const SCOPE = 'mcp:tools';
export const CODE_TTL_MS = 2 * 60 * 1000;
export const CLIENT_TTL_MS = 24 * 60 * 60 * 1000;
/** See `OAuthServerOptions.refreshTokenRaceWindowSeconds`. */
export const DEFAULT_REFRESH_RACE_WINDOW_SECONDS = 2;
/** How long a login form stays usable. */
export const TRANSACTION_TTL_MS = 10 * 60 * 1000;

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new InvalidArgumentError(`${name} must be a positive integer`);
  }
  return value;
}

function nonNegativeInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new InvalidArgumentError(`${name} must be a non-negative integer`);
  }
  return value;
}

export function resolveOptions(options: OAuthServerOptions): ResolvedOptions {
  if (typeof options.login !== 'function') throw new InvalidArgumentError('login hook is required');
  if (typeof options.issueAccessToken !== 'function') {
    throw new InvalidArgumentError('issueAccessToken hook is required');
  }
  if (typeof options.checkSubject !== 'function') {
    throw new InvalidArgumentError('checkSubject hook is required');
  }
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  for (const [name, value] of Object.entries(limits)) positiveInteger(`limits.${name}`, value);
  return {
    login: options.login,
    issueAccessToken: options.issueAccessToken,
    checkSubject: options.checkSubject,
    jwks: options.jwks,
    applicationName: options.applicationName ?? 'MCP server',
    store: options.store ?? new MemoryOAuthStore(),
    throttles: options.throttles ?? memoryThrottles(options.clock ?? systemClock),
    clock: options.clock ?? systemClock,
    limits,
    refreshTokenTtlMs:
      positiveInteger('refreshTokenTtlSeconds', options.refreshTokenTtlSeconds ?? 14 * 86_400) *
      1000,
    refreshTokenRaceWindowMs:
      nonNegativeInteger(
        'refreshTokenRaceWindowSeconds',
        options.refreshTokenRaceWindowSeconds ?? DEFAULT_REFRESH_RACE_WINDOW_SECONDS,
      ) * 1000,
  };
}
