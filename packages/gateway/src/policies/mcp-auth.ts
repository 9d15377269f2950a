import { bearerToken } from '@mcp-identity/common';
import { type Static, Type } from '@sinclair/typebox';
import type { VerifiedToken } from '../auth/verifier.js';
import type { McpCall } from '../data-plane/jsonrpc.js';
import {
  insufficientScope,
  invalidToken,
  keysUnavailable,
  tooManyUnknownTokens,
} from './challenge.js';
import { definePolicy } from './define-policy.js';
import type {
  Authenticator,
  AuthOutcome,
  CallerNeeds,
  Exchange,
  Policy,
  PolicySetup,
} from './policy.js';
import { closed, stringList } from './schema-parts.js';

const authGroup = Type.Partial(
  Type.Object({ enabled: Type.Boolean(), exceptions: stringList() }, closed),
);

/** `mcp-auth` v1: (issuers, audiences, requiredScopes, forwardToken) plus WSO2's per-group `{enabled, exceptions}` switches. */
const MCP_AUTH_V1 = Type.Partial(
  Type.Object(
    {
      issuers: stringList(),
      audiences: stringList(),
      requiredScopes: stringList(),
      forwardToken: Type.Boolean(),
      userIdClaim: Type.String({ minLength: 1 }),
      tools: authGroup,
      resources: authGroup,
      prompts: authGroup,
      methods: authGroup,
    },
    closed,
  ),
);

export type McpAuthParams = Static<typeof MCP_AUTH_V1>;
type Group = Static<typeof authGroup>;

const NONE: readonly string[] = [];

const BEARER_PREFIX = 'Bearer ';

function groupRequiresAuth(group: Group | undefined, key: string): boolean {
  const enabled = group?.enabled ?? true;
  return group?.exceptions?.includes(key) ? !enabled : enabled;
}

/** Audiences are compared exactly: an entry with `*` is someone expecting a wildcard. */
const WILDCARD = '*';

/**
 * `mcp-auth` v1 for one proxy: which requests need a token, and whether a presented token is
 * acceptable for this proxy (issuer among the selected key managers, audience, required
 * scopes). Signature and time checks are the shared verifier's job.
 */
class McpAuthPolicy implements Policy, Authenticator {
  readonly authenticator: Authenticator = this;
  readonly callers: CallerNeeds;
  readonly authorizationServers: readonly string[];
  readonly forwardToken: boolean;
  readonly userIdClaim: string;
  readonly scopes: readonly string[];
  private readonly issuers: ReadonlySet<string>;
  private readonly audiences: ReadonlySet<string>;

  constructor(
    private readonly params: McpAuthParams,
    private readonly setup: PolicySetup,
  ) {
    const managers = params.issuers?.length
      ? params.issuers.flatMap((name) => setup.keyManagers.filter((km) => km.name === name))
      : setup.keyManagers;
    this.issuers = new Set(managers.map((km) => km.issuer));
    this.authorizationServers = [...this.issuers];
    this.audiences = new Set(params.audiences);
    this.scopes = params.requiredScopes ?? [];
    this.forwardToken = params.forwardToken ?? false;
    this.userIdClaim = params.userIdClaim ?? 'sub';
    const groups = [params.tools, params.resources, params.prompts, params.methods];
    this.callers = {
      // GET and DELETE carry no JSON-RPC; they need auth unless every group is switched off.
      transport: groups.some((g) => (g?.enabled ?? true) || (g?.exceptions?.length ?? 0) > 0),
      // No switch exempts any call: a POST can be refused from its headers alone.
      everyCall: groups.every((g) => (g?.enabled ?? true) && (g?.exceptions?.length ?? 0) === 0),
      call: (call) => this.callNeedsToken(call),
    };
  }

  authenticate(exchange: Exchange): AuthOutcome | Promise<AuthOutcome> {
    const authorization = exchange.headers.authorization;
    const { verifier } = this.setup;
    let looked: string | undefined;
    if (authorization?.startsWith(BEARER_PREFIX)) {
      // A token verified before passed the header syntax check then: `Bearer <it>` is that
      // header, so a cache hit needs no second scan of some 700 characters by the RFC 6750
      // pattern. Any other spelling (case, extra spaces) takes the full path below.
      looked = authorization.slice(BEARER_PREFIX.length);
      const cached = verifier.cached(looked);
      if (cached) return this.accept(exchange, cached);
    }
    const raw = bearerToken(authorization);
    if (raw === undefined) {
      return {
        refusal: authorization
          ? invalidToken(exchange, 'malformed_header', 'malformed authorization header')
          : invalidToken(exchange, 'no_token', 'no token'),
      };
    }
    if (raw !== looked) {
      const cached = verifier.cached(raw);
      if (cached) return this.accept(exchange, cached);
    }
    return verifier.verify(raw, exchange.remoteAddress).then((result) => {
      if (result.ok) return this.accept(exchange, result.token);
      const { check, reason, retryAfterSeconds } = result;
      if (check === 'unavailable') {
        return { refusal: keysUnavailable(exchange, retryAfterSeconds ?? 1, reason) };
      }
      if (check === 'throttled') {
        return { refusal: tooManyUnknownTokens(exchange, retryAfterSeconds ?? 1, reason) };
      }
      return { refusal: invalidToken(exchange, check, reason) };
    });
  }

  /** Whether this proxy accepts a verified token: issuer, audience, required scopes. */
  private accept(exchange: Exchange, token: VerifiedToken): AuthOutcome {
    if (!this.issuers.has(token.issuer)) {
      return {
        refusal: invalidToken(exchange, 'issuer_not_accepted', 'issuer not accepted by this proxy'),
      };
    }
    if (!this.audienceAccepted(token, exchange.resourceUrl)) {
      return { refusal: invalidToken(exchange, 'audience', 'audience not accepted') };
    }
    const missing =
      this.scopes.length === 0 ? NONE : this.scopes.filter((s) => !token.scopes.has(s)).sort();
    if (missing.length > 0) {
      return { token, refusal: insufficientScope(exchange, missing, 'required scopes missing') };
    }
    return { token };
  }

  /**
   * This proxy's own resource URL for the listener that received the request (RFC 8707; MCP
   * authorization, "Token Audience Binding and Validation": a token not issued for this resource
   * is refused), or one of the configured audiences. With none configured, only the resource URL:
   * a token the same issuer minted for another resource server never passes by default.
   */
  private audienceAccepted(token: VerifiedToken, resourceUrl: string): boolean {
    for (const audience of token.audiences) {
      if (audience === resourceUrl || this.audiences.has(audience)) return true;
    }
    return false;
  }

  private callNeedsToken(call: McpCall): boolean {
    const { capability, callsItem } = call.kind;
    if (callsItem && capability) return groupRequiresAuth(this.params[capability], call.target);
    return groupRequiresAuth(this.params.methods, call.method);
  }
}

export const mcpAuth = definePolicy({
  name: 'mcp-auth',
  versions: { v1: MCP_AUTH_V1 },
  phase: 0,
  create: (params, setup) => new McpAuthPolicy(params, setup),
  check(params, context) {
    const problems: Array<[string, string]> = [];
    const { issuers, audiences } = params;
    for (const [i, audience] of (Array.isArray(audiences) ? audiences : []).entries()) {
      if (typeof audience === 'string' && audience.includes(WILDCARD)) {
        problems.push([
          `audiences[${i}]`,
          "'*' is no wildcard: audiences are compared exactly, and no setting accepts tokens " +
            "issued for any resource. This proxy's own resource URL (<gateway URL><context>/mcp) " +
            'is always accepted; list each other audience to accept, e.g. ' +
            'audiences: [https://other-rs.example/mcp]',
        ]);
      }
    }
    if (!context.keyManagers || !Array.isArray(issuers)) return problems;
    for (const [i, name] of issuers.entries()) {
      if (typeof name === 'string' && !context.keyManagers.includes(name)) {
        problems.push([`issuers[${i}]`, `no key manager named '${name}' is configured`]);
      }
    }
    return problems;
  },
});
