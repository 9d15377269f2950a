import type { TokenVerifier, VerifiedToken } from '../auth/verifier.js';
import type { KeyManagerConfig } from '../config.js';
import type { McpCall } from '../jsonrpc.js';
import {
  AUTHENTICATION_FAILED,
  bearerChallenge,
  insufficientScope,
  type Refusal,
} from './challenge.js';

interface Group {
  enabled?: boolean;
  exceptions?: string[];
}

export interface McpAuthParams {
  issuers?: string[];
  audiences?: string[];
  requiredScopes?: string[];
  forwardToken?: boolean;
  userIdClaim?: string;
  tools?: Group;
  resources?: Group;
  prompts?: Group;
  methods?: Group;
}

export type AuthOutcome = { ok: true; token: VerifiedToken } | { ok: false; refusal: Refusal };

const GROUP_BY_METHOD: Record<string, keyof McpAuthParams> = {
  'tools/call': 'tools',
  'resources/read': 'resources',
  'prompts/get': 'prompts',
};

function groupRequiresAuth(group: Group | undefined, key: string): boolean {
  const enabled = group?.enabled ?? true;
  return group?.exceptions?.includes(key) ? !enabled : enabled;
}

/**
 * `mcp-auth` v1 for one proxy: which requests need a token, and whether a presented token is
 * acceptable for this proxy (issuer among the selected key managers, audience, required
 * scopes). Signature and time checks are the shared verifier's job.
 */
export class McpAuthPolicy {
  readonly keyManagers: KeyManagerConfig[];
  readonly requiredScopes: string[];
  readonly forwardToken: boolean;
  readonly userIdClaim: string;
  private readonly issuers: Set<string>;

  constructor(
    private readonly params: McpAuthParams,
    allKeyManagers: KeyManagerConfig[],
    private readonly verifier: TokenVerifier,
    readonly resourceMetadataUrl: string,
  ) {
    this.keyManagers = params.issuers?.length
      ? params.issuers.flatMap((name) => allKeyManagers.filter((km) => km.name === name))
      : allKeyManagers;
    this.issuers = new Set(this.keyManagers.map((km) => km.issuer));
    this.requiredScopes = params.requiredScopes ?? [];
    this.forwardToken = params.forwardToken ?? false;
    this.userIdClaim = params.userIdClaim ?? 'sub';
  }

  /** GET and DELETE carry no JSON-RPC; they need auth unless every group is switched off. */
  transportRequiresAuth(): boolean {
    const groups = [
      this.params.tools,
      this.params.resources,
      this.params.prompts,
      this.params.methods,
    ];
    return groups.some((g) => (g?.enabled ?? true) || (g?.exceptions?.length ?? 0) > 0);
  }

  callRequiresAuth(call: McpCall): boolean {
    const groupName = GROUP_BY_METHOD[call.method];
    if (groupName)
      return groupRequiresAuth(this.params[groupName] as Group | undefined, call.target);
    return groupRequiresAuth(this.params.methods, call.method);
  }

  async authenticate(authorization: string | undefined): Promise<AuthOutcome> {
    const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(authorization ?? '');
    if (!match)
      return this.unauthenticated(authorization ? 'malformed authorization header' : 'no token');
    const result = await this.verifier.verify(match[1] as string);
    if (!result.ok) return this.unauthenticated(result.reason);
    const { token } = result;
    if (!this.issuers.has(token.issuer))
      return this.unauthenticated('issuer not accepted by this proxy');
    const audiences = this.params.audiences ?? [];
    if (audiences.length > 0 && !audiences.some((a) => token.audiences.includes(a))) {
      return this.unauthenticated('audience not accepted');
    }
    const missing = this.requiredScopes.filter((s) => !token.scopes.has(s)).sort();
    if (missing.length > 0) {
      return {
        ok: false,
        refusal: insufficientScope(this.resourceMetadataUrl, missing, 'required scopes missing'),
      };
    }
    return { ok: true, token };
  }

  private unauthenticated(reason: string): AuthOutcome & { ok: false } {
    return {
      ok: false,
      refusal: {
        status: 401,
        challenge: bearerChallenge(this.resourceMetadataUrl, this.requiredScopes, 'invalid_token'),
        body: AUTHENTICATION_FAILED,
        reason,
        missingScopes: [],
      },
    };
  }

  /** RFC 9728 protected resource metadata for this proxy. */
  metadata(resource: string): Record<string, unknown> {
    const doc: Record<string, unknown> = {
      resource,
      authorization_servers: [...this.issuers],
    };
    if (this.requiredScopes.length > 0) doc.scopes_supported = this.requiredScopes;
    return doc;
  }
}
