import type { Clock } from '@mcp-identity/common';
import type { TokenService } from '../../auth/tokens.js';
import type { RoleStore } from '../../scim/roles.js';
import type { UserStore } from '../../scim/users.js';
import { type AppStore, UNUSED_CLIENT_TTL_SECONDS } from '../../store/apps.js';
import type { KeyStore } from '../../store/keys.js';
import type { ApiResourceStore } from '../../store/resources.js';
import type { OAuthClients } from '../document-clients.js';
import type { GrantStore } from '../grants.js';
import type { LoginTransactions } from '../transactions.js';

export type OAuthRouteOptions = {
  apps: AppStore;
  /** The clients of the OAuth endpoints: `apps` and Client ID Metadata Document clients. */
  clients: OAuthClients;
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
  /** Throttle windows' clock. */
  clock: Clock;
};

/**
 * Abuse limits of the OAuth endpoints; every one refuses before the work it protects. Counts by
 * address are backed by counts by network (`clientNetwork`: the /24 or /64), and no cap is a
 * switch a caller can flip for everyone: a full pool drops the entries of the network holding
 * the most first.
 */
export type OAuthLimits = {
  /** Dynamic client registrations per client IP per hour; 429 beyond. */
  registrationsPerIpPerHour: number;
  /** Dynamic client registrations per client network per hour; 429 beyond. */
  registrationsPerNetworkPerHour: number;
  /**
   * Dynamically registered clients kept at most. A registration beyond it evicts the oldest
   * never-used client of the network that registered the most; 503 only when every one is used.
   */
  maxDynamicClients: number;
  /** A dynamic client without a successful token request is removed this long after registering. */
  unusedClientTtlSeconds: number;
  /** Sign-in attempts per user name per window (successful ones are given back); 429 beyond. */
  loginAttemptsPerAccount: number;
  /** Sign-in attempts per client IP per window (successful ones are given back); 429 beyond. */
  loginAttemptsPerIp: number;
  loginWindowSeconds: number;
  /** Authorize requests (GET and POST) per client IP per minute; 429 beyond. */
  authorizeRequestsPerIpPerMinute: number;
  /** Authorize requests (GET and POST) per client network per minute; 429 beyond. */
  authorizeRequestsPerNetworkPerMinute: number;
  /** Rendered, not yet submitted login forms kept at most (each is a transaction row). */
  maxPendingLogins: number;
  /** Pending login forms per client network; a new one beyond drops the network's oldest. */
  pendingLoginsPerNetwork: number;
  /** Pending login forms per client id; a new one beyond drops the oldest of its busiest network. */
  pendingLoginsPerClient: number;
};

export const DEFAULT_OAUTH_LIMITS: OAuthLimits = {
  registrationsPerIpPerHour: 20,
  registrationsPerNetworkPerHour: 100,
  maxDynamicClients: 10_000,
  unusedClientTtlSeconds: UNUSED_CLIENT_TTL_SECONDS,
  loginAttemptsPerAccount: 10,
  loginAttemptsPerIp: 100,
  loginWindowSeconds: 15 * 60,
  authorizeRequestsPerIpPerMinute: 120,
  authorizeRequestsPerNetworkPerMinute: 600,
  maxPendingLogins: 10_000,
  pendingLoginsPerNetwork: 1_000,
  pendingLoginsPerClient: 2_000,
};
