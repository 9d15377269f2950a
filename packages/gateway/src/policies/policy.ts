import type { IncomingHttpHeaders } from 'node:http';
import type { ThrottleFactory } from '@mcp-identity/common';
import type { TSchema } from '@sinclair/typebox';
import type { TokenVerifier, VerifiedToken } from '../auth/verifier.js';
import type { KeyManagerConfig } from '../config.js';
import type { SecretAccess } from '../control-plane/secret-ref.js';
import type { McpCall, ParamHeader } from '../data-plane/jsonrpc.js';

/** What the data plane needs to answer a refused request itself instead of forwarding it. */
export interface Refusal {
  status: 401 | 403 | 429 | 503;
  /** Response headers besides `content-type` (`www-authenticate`, `retry-after`, ...). */
  headers: Readonly<Record<string, string>>;
  body: unknown;
  decision: 'unauthenticated' | 'forbidden' | 'rate_limited' | 'unavailable';
  /** Why, for the audit log only. */
  reason: string;
  missingScopes: readonly string[];
  /** The `mcp-authz` rule that refused, for the audit log. */
  rule?: string;
}

/** One MCP request as the policies of its proxy see it. */
export interface Exchange {
  readonly httpMethod: string;
  readonly headers: IncomingHttpHeaders;
  /** The client's IP address (the connection's peer). */
  readonly remoteAddress: string;
  /** The JSON-RPC message of a POST; undefined before the body is read and for GET/DELETE. */
  readonly call: McpCall | undefined;
  /** The caller's verified token once the caller was authenticated (`Policy.callers`). */
  readonly token: VerifiedToken | undefined;
  /** This proxy's resource URL on the listener and host that received the request (RFC 9728). */
  readonly resourceUrl: string;
  readonly resourceMetadataUrl: string;
  /** Scopes the proxy advertises: the `scope` of its 401 challenges. */
  readonly scopesSupported: readonly string[];
  /** Who is calling, for per-caller limits: the authenticated subject, else the client address. */
  callerKey(): string;
  /**
   * The `x-mcp-header` annotations the proxy learnt of the tool a tools/call names: which of
   * its arguments a modern request mirrors into `Mcp-Param-*` headers.
   */
  paramHeaders(): readonly ParamHeader[] | undefined;
}

/**
 * What every policy hook returns: a refusal, or undefined to let the request go on; a promise
 * only while something asynchronous is under way, so the fast path awaits nothing.
 */
export type Verdict = Refusal | undefined | Promise<Refusal | undefined>;

/**
 * Which requests a policy needs an authenticated caller for. A proxy's policies' needs are
 * combined once, at deploy (`callerRequirement` in `data-plane/registry.ts`); the request path
 * authenticates when that says so, before any hook runs.
 */
export interface CallerNeeds {
  /** GET (the SSE stream) and DELETE (the session's end), which carry no JSON-RPC call. */
  readonly transport: boolean;
  /** Every POSTed call whatever it calls: decided from the headers, before the body is read. */
  readonly everyCall: boolean;
  /** This POSTed call. */
  readonly call: (call: McpCall) => boolean;
}

/**
 * A policy attached to a proxy. Every hook is optional; a refusal answers the client and nothing
 * reaches the upstream. Hooks run in the order of the policies' `phase`.
 */
export interface Policy {
  /**
   * Decides once the body is parsed (`exchange.call` is set for a POST), after the caller was
   * authenticated where `callers` asks for it.
   */
  onRequest?(exchange: Exchange): Verdict;
  /**
   * Decides a modern (2026-07-28) request again once its body is read and agrees with its
   * headers: what the headers could not tell (`mcp-authz` conditions over the arguments).
   */
  onBody?(exchange: Exchange): Verdict;
  /**
   * Filters list results: false removes the item from the caller's `tools/list` and friends
   * (`exchange.call.kind` names the capability listed).
   */
  onListItem?(exchange: Exchange, item: Record<string, unknown>): boolean;
  /** Scopes this policy may demand, advertised as the metadata's `scopes_supported`. */
  readonly scopes?: readonly string[];
  /** Requests this policy needs an authenticated caller for. */
  readonly callers?: CallerNeeds;
  /** How callers are authenticated (`mcp-auth`); the proxy runtime takes it at deploy. */
  readonly authenticator?: Authenticator;
}

/** The verified token, or a refusal (with the token when it is valid but not sufficient). */
export interface AuthOutcome {
  token?: VerifiedToken;
  refusal?: Refusal;
}

/** Establishes who is calling (`mcp-auth`); one per proxy (`Policy.authenticator`). */
export interface Authenticator {
  /** Synchronous when the token is already verified (a cache hit), so the fast path awaits nothing. */
  authenticate(exchange: Exchange): AuthOutcome | Promise<AuthOutcome>;
  /** Issuers listed as the metadata's `authorization_servers`. */
  readonly authorizationServers: readonly string[];
  /** Whether the caller's `Authorization` header goes on to the upstream. */
  readonly forwardToken: boolean;
  /** Claim that names the caller in the audit log and in per-caller limits. */
  readonly userIdClaim: string;
}

/** What a policy may use from the gateway when it is created for a proxy. */
export interface PolicySetup {
  /** The proxy's name (`metadata.name`): `proxy.name` of `mcp-authz` conditions. */
  proxy: string;
  keyManagers: readonly KeyManagerConfig[];
  verifier: TokenVerifier;
  /** Clock in milliseconds since the epoch. */
  now: () => number;
  /**
   * Counters of this proxy (names are scoped to it), shared with the gateway's other processes
   * and instances where it is configured so (`mcp-ratelimit`).
   */
  throttles: ThrottleFactory;
}

/** What the running gateway knows that a definition may refer to. */
export interface ValidationContext {
  /** Names of the configured key managers. */
  keyManagers?: readonly string[];
  /** Resolve `secretRef`s now (deployments), so a missing secret is a validation error. */
  resolveSecrets?: boolean;
  /** What a `secretRef` may read; default `DEFAULT_SECRET_ACCESS`. */
  secrets?: SecretAccess;
}

/** A policy kind, created by name from the registry (`policies/index.ts`); see `definePolicy`. */
export interface PolicyFactory {
  readonly name: string;
  /** JSON Schema of the params, per major version (`v1`). */
  readonly versions: Readonly<Record<string, TSchema>>;
  /** Lower runs first: authentication 0, authorization 1, traffic shaping 2. */
  readonly phase: number;
  create(params: Record<string, unknown>, setup: PolicySetup): Policy;
  /** Checks beyond the schema against the running gateway; field paths relative to params. */
  check?(params: Record<string, unknown>, context: ValidationContext): Array<[string, string]>;
}
