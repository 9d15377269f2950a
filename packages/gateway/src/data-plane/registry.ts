import type { Logger, ThrottleFactory, ThrottleSpec } from '@mcp-identity/common';
import type { TokenVerifier } from '../auth/verifier.js';
import type { KeyManagerConfig } from '../config.js';
import { type McpProxyDefinition, SUPPORTED_SPEC_VERSIONS } from '../control-plane/definition.js';
import { resolveSecretRef, type SecretAccess } from '../control-plane/secret-ref.js';
import { POLICIES } from '../policies/index.js';
import type { Authenticator, CallerNeeds, Policy } from '../policies/policy.js';
import { UpstreamConnections, type UpstreamLimits } from './forwarding.js';
import { type McpCall, ParamHeaderBook } from './jsonrpc.js';
import { TokenExchanger } from './token-exchange.js';

/** A proxy's addresses on one listener and host (RFC 9728 resource and its metadata). */
export interface ResourceUrls {
  /** `<base><context>/mcp` */
  resourceUrl: string;
  /** `<base><context>/.well-known/oauth-protected-resource` */
  resourceMetadataUrl: string;
}

/** Everything the data plane needs to serve one deployed proxy. */
export interface ProxyRuntime {
  id: string;
  context: string;
  /** Path and query sent upstream: exactly those of `spec.upstream.url`. */
  upstreamPath: string;
  /** `spec.upstream.url`, for the attributes of the spans of upstream requests. */
  upstreamUrl: URL;
  /** This proxy's own connections to its upstream, and the bounded queue behind them. */
  upstream: UpstreamConnections;
  /** Policies in the order their hooks run. */
  policies: readonly Policy[];
  /** Policies that filter list results (`filterLists`). */
  listPolicies: readonly Policy[];
  authenticator: Authenticator | undefined;
  /** Which requests need an authenticated caller (`callerRequirement`). */
  callers: CallerNeeds;
  /** Required scopes plus the scopes of every rule: PRM `scopes_supported` and 401 `scope`. */
  scopesSupported: readonly string[];
  /** MCP protocol versions the proxy accepts (`spec.specVersions`). */
  specVersions: ReadonlySet<string>;
  /** `upstream.auth`: the header and the resolved secret added to every upstream request. */
  upstreamAuth: { header: string; value: string } | undefined;
  /** `upstream.tokenExchange`: the caller's token exchanged for the upstream's (RFC 8693). */
  tokenExchange: TokenExchanger | undefined;
  /**
   * This proxy's addresses by listener base URL (`scheme://host[:port]`), made the first time a
   * base is seen (`resourceUrlsOf` in `front.ts`): a replaced proxy starts with none.
   */
  resourceUrls: Map<string, ResourceUrls>;
  /** The upstream's `x-mcp-header` annotations, learnt from modern tools/list answers. */
  paramHeaders: ParamHeaderBook;
}

export interface RegistryOptions {
  keyManagers: KeyManagerConfig[];
  verifier: TokenVerifier;
  upstream: UpstreamLimits;
  now: () => number;
  logger: Logger;
  /** Where `mcp-ratelimit` counts (`ratelimit-counters.ts`). */
  throttles: ThrottleFactory;
  /** What a `secretRef` may read. */
  secrets: SecretAccess;
}

const NO_CALL_NEEDS_A_CALLER = (_call: McpCall) => false;

/** A proxy that exchanges tokens needs a caller on every request: each carries an exchanged one. */
const EVERY_REQUEST_NEEDS_A_CALLER: CallerNeeds = {
  transport: true,
  everyCall: true,
  call: () => true,
};

/**
 * Whether a request needs an authenticated caller: the one place that decides, once per proxy at
 * deploy, from what its policies need (mcp-auth's switches, the calls mcp-authz governs) and
 * whether its upstream takes exchanged tokens. A request needs one when any policy needs it; the
 * request path reads the answer.
 */
export function callerRequirement(
  policies: readonly Policy[],
  exchangesTokens: boolean,
): CallerNeeds {
  if (exchangesTokens) return EVERY_REQUEST_NEEDS_A_CALLER;
  const needs = policies.flatMap((p) => (p.callers ? [p.callers] : []));
  const [only] = needs;
  let call = NO_CALL_NEEDS_A_CALLER;
  if (needs.length === 1 && only) call = only.call;
  if (needs.length > 1) {
    call = (mcpCall) => {
      for (const need of needs) if (need.call(mcpCall)) return true;
      return false;
    };
  }
  return {
    transport: needs.some((n) => n.transport),
    everyCall: needs.some((n) => n.everyCall),
    call,
  };
}

function specVersionsOf(definition: McpProxyDefinition): ReadonlySet<string> {
  const { specVersions, specVersion } = definition.spec;
  return new Set(specVersions ?? (specVersion ? [specVersion] : SUPPORTED_SPEC_VERSIONS));
}

/**
 * The live routing table: deployed proxies by context. Replacing an entry takes effect for the
 * next request; requests already in flight or queued finish on the pool they started on.
 */
export class ProxyRegistry {
  private readonly byContext = new Map<string, ProxyRuntime>();
  /**
   * The table the front reads for every request: nothing of the registry runs on the request
   * path, which only reads what was decided at deploy.
   */
  readonly routes: ReadonlyMap<string, ProxyRuntime> = this.byContext;
  private readonly contextById = new Map<string, string>();

  constructor(private readonly options: RegistryOptions) {}

  /** A secret of the proxy's, or undefined (logged: the proxy is not routed without it). */
  private secret(id: string, ref: string): string | undefined {
    const secret = resolveSecretRef(ref, this.options.secrets);
    if (secret.ok) return secret.value;
    this.options.logger.error(
      { proxy: id, problem: secret.problem },
      'MCP proxy not routed: its upstream secret cannot be read',
    );
    return undefined;
  }

  /**
   * Routes a definition. One whose upstream secrets cannot be read stays unrouted (and says so
   * in the log) rather than reaching the upstream without its credential.
   */
  apply(id: string, definition: McpProxyDefinition): void {
    this.remove(id);
    if ((definition.spec.deploymentState ?? 'deployed') !== 'deployed') return;
    const { context, upstream } = definition.spec;
    let upstreamAuth: ProxyRuntime['upstreamAuth'];
    if (upstream.auth) {
      const value = this.secret(id, upstream.auth.secretRef);
      if (value === undefined) return;
      upstreamAuth = { header: upstream.auth.header.toLowerCase(), value };
    }
    let tokenExchange: TokenExchanger | undefined;
    const exchange = upstream.tokenExchange;
    if (exchange) {
      const clientSecret = this.secret(id, exchange.clientSecretRef);
      if (clientSecret === undefined) return;
      const settings = {
        tokenEndpoint: exchange.tokenEndpoint,
        clientId: exchange.clientId,
        clientSecret,
        resource: exchange.resource ?? upstream.url,
        scopes: exchange.scopes,
      };
      tokenExchange = new TokenExchanger(settings, this.options.now, this.options.logger, id);
    }
    const upstreamUrl = new URL(upstream.url);
    const setup = {
      proxy: id,
      keyManagers: this.options.keyManagers,
      verifier: this.options.verifier,
      now: this.options.now,
      // A proxy's id cannot contain `/` (control-plane/definition.ts), so names cannot collide
      // across proxies.
      throttles: (spec: ThrottleSpec) =>
        this.options.throttles({ ...spec, name: `${id}/${spec.name}` }),
    };
    const attached = (definition.spec.policies ?? [])
      .map((ref) => ({ ref, factory: POLICIES.get(ref.name) }))
      .filter((entry) => entry.factory !== undefined)
      .sort((a, b) => (a.factory?.phase ?? 0) - (b.factory?.phase ?? 0));
    const policies = attached.map(
      ({ ref, factory }) => factory?.create(ref.params ?? {}, setup) as Policy,
    );
    const runtime: ProxyRuntime = {
      id,
      context,
      upstreamPath: `${upstreamUrl.pathname}${upstreamUrl.search}`,
      upstreamUrl,
      upstream: new UpstreamConnections(upstreamUrl.origin, this.options.upstream),
      policies,
      listPolicies: policies.filter((p) => p.onListItem),
      authenticator: policies.find((p) => p.authenticator)?.authenticator,
      callers: callerRequirement(policies, tokenExchange !== undefined),
      scopesSupported: [...new Set(policies.flatMap((p) => p.scopes ?? []))],
      specVersions: specVersionsOf(definition),
      upstreamAuth,
      tokenExchange,
      resourceUrls: new Map(),
      paramHeaders: new ParamHeaderBook(),
    };
    this.byContext.set(context, runtime);
    this.contextById.set(id, context);
  }

  remove(id: string): void {
    const context = this.contextById.get(id);
    if (context === undefined) return;
    const runtime = this.byContext.get(context);
    this.byContext.delete(context);
    this.contextById.delete(id);
    // In-flight streams may be long-lived; let them (and those queued) finish on the old pool.
    void runtime?.upstream.close().catch(() => undefined);
    void runtime?.tokenExchange?.close().catch(() => undefined);
  }

  /** Every routed proxy. */
  runtimes(): Iterable<ProxyRuntime> {
    return this.byContext.values();
  }

  async close(): Promise<void> {
    const pools = [...this.byContext.values()].flatMap((r) => [
      r.upstream.destroy(),
      r.tokenExchange?.destroy(),
    ]);
    this.byContext.clear();
    this.contextById.clear();
    await Promise.all(pools);
  }
}
