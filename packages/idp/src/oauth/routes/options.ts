import type { TokenService } from '../../auth/tokens.js';
import type { RoleStore } from '../../scim/roles.js';
import type { UserStore } from '../../scim/users.js';
import type { AppStore } from '../../store/apps.js';
import type { KeyStore } from '../../store/keys.js';
import type { ApiResourceStore } from '../../store/resources.js';
import type { GrantStore } from '../grants.js';
import type { LoginTransactions } from '../transactions.js';

export type OAuthRouteOptions = {
  apps: AppStore;
  tokens: TokenService;
  grants: GrantStore;
  transactions: LoginTransactions;
  keys: KeyStore;
  users: UserStore;
  roles: RoleStore;
  resources: ApiResourceStore;
  /** Public base URL, e.g. https://localhost:9443. */
  baseUrl: () => string;
  knownScopes: readonly string[];
  secureCookies: boolean;
  limits: OAuthLimits;
  /** Milliseconds since the epoch (throttle windows). */
  clock: () => number;
};

/** Abuse limits of the OAuth endpoints; every one refuses before the work it protects. */
export type OAuthLimits = {
  /** Dynamic client registrations per client IP per hour; 429 beyond. */
  registrationsPerIpPerHour: number;
  /** Dynamically registered clients kept at most; registration answers 503 beyond. */
  maxDynamicClients: number;
  /** Sign-in attempts per user name per window (successful ones are given back); 429 beyond. */
  loginAttemptsPerAccount: number;
  /** Sign-in attempts per client IP per window (successful ones are given back); 429 beyond. */
  loginAttemptsPerIp: number;
  loginWindowSeconds: number;
  /** Authorize requests (GET and POST) per client IP per minute; 429 beyond. */
  authorizeRequestsPerIpPerMinute: number;
};

export const DEFAULT_OAUTH_LIMITS: OAuthLimits = {
  registrationsPerIpPerHour: 20,
  maxDynamicClients: 10_000,
  loginAttemptsPerAccount: 10,
  loginAttemptsPerIp: 100,
  loginWindowSeconds: 15 * 60,
  authorizeRequestsPerIpPerMinute: 120,
};
