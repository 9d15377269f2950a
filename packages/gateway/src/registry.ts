import { Pool } from 'undici';
import type { TokenVerifier } from './auth/verifier.js';
import type { KeyManagerConfig } from './config.js';
import type { McpProxyDefinition } from './definition.js';
import { type McpAuthParams, McpAuthPolicy } from './policies/mcp-auth.js';
import { type McpAuthzParams, McpAuthzPolicy } from './policies/mcp-authz.js';

/** Everything the data plane needs to serve one deployed proxy. */
export interface ProxyRuntime {
  id: string;
  context: string;
  upstreamUrl: URL;
  /** Path and query sent upstream: exactly those of `spec.upstream.url`. */
  upstreamPath: string;
  pool: Pool;
  auth?: McpAuthPolicy;
  authz?: McpAuthzPolicy;
  /** `<gatewayurl><context>/mcp` */
  resourceUrl: string;
  /** `<gatewayurl><context>/.well-known/oauth-protected-resource` */
  resourceMetadataUrl: string;
}

export interface RegistryOptions {
  keyManagers: KeyManagerConfig[];
  verifier: TokenVerifier;
  gatewayUrl: () => string;
  idleTimeoutMs: number;
}

/**
 * The live routing table: deployed proxies by context. Replacing an entry takes effect for the
 * next request; requests already in flight finish on the pool they started on.
 */
export class ProxyRegistry {
  private readonly byContext = new Map<string, ProxyRuntime>();
  private readonly contextById = new Map<string, string>();

  constructor(private readonly options: RegistryOptions) {}

  apply(id: string, definition: McpProxyDefinition): void {
    this.remove(id);
    if ((definition.spec.deploymentState ?? 'deployed') !== 'deployed') return;
    const { context } = definition.spec;
    const upstreamUrl = new URL(definition.spec.upstream.url);
    const base = this.options.gatewayUrl();
    const resourceMetadataUrl = `${base}${context}/.well-known/oauth-protected-resource`;
    const runtime: ProxyRuntime = {
      id,
      context,
      upstreamUrl,
      upstreamPath: `${upstreamUrl.pathname}${upstreamUrl.search}`,
      pool: new Pool(upstreamUrl.origin, {
        connections: 128,
        keepAliveTimeout: 30_000,
        headersTimeout: this.options.idleTimeoutMs,
        bodyTimeout: this.options.idleTimeoutMs,
      }),
      resourceUrl: `${base}${context}/mcp`,
      resourceMetadataUrl,
    };
    for (const policy of definition.spec.policies ?? []) {
      if (policy.name === 'mcp-auth') {
        runtime.auth = new McpAuthPolicy(
          (policy.params ?? {}) as McpAuthParams,
          this.options.keyManagers,
          this.options.verifier,
          resourceMetadataUrl,
        );
      } else if (policy.name === 'mcp-authz') {
        runtime.authz = new McpAuthzPolicy((policy.params ?? {}) as McpAuthzParams);
      }
    }
    this.byContext.set(context, runtime);
    this.contextById.set(id, context);
  }

  remove(id: string): void {
    const context = this.contextById.get(id);
    if (context === undefined) return;
    const runtime = this.byContext.get(context);
    this.byContext.delete(context);
    this.contextById.delete(id);
    // In-flight streams may be long-lived; let them finish on the old pool.
    void runtime?.pool.close().catch(() => undefined);
  }

  byContextPath(context: string): ProxyRuntime | undefined {
    return this.byContext.get(context);
  }

  async close(): Promise<void> {
    const pools = [...this.byContext.values()].map((r) => r.pool.destroy());
    this.byContext.clear();
    this.contextById.clear();
    await Promise.all(pools);
  }
}
