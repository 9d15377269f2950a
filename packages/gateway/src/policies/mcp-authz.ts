import { type Static, Type } from '@sinclair/typebox';
import type { JWTPayload } from 'jose';
import type { VerifiedToken } from '../auth/verifier.js';
import type { McpCall } from '../jsonrpc.js';
import { insufficientScope } from './challenge.js';
import { definePolicy } from './define-policy.js';
import {
  type Exchange,
  LIST_ITEM_CALL,
  type ListMethod,
  type Policy,
  type Refusal,
} from './policy.js';
import { closed, stringList } from './schema-parts.js';

const claimMatcher = Type.Object(
  { claim: Type.String({ minLength: 1 }), values: stringList({ minItems: 1 }) },
  closed,
);

const rule = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 256 }),
    scopes: Type.Optional(
      Type.Partial(
        Type.Object(
          { allOf: stringList({ minItems: 1 }), anyOf: stringList({ minItems: 1 }) },
          { ...closed, minProperties: 1 },
        ),
      ),
    ),
    claims: Type.Optional(
      Type.Partial(
        Type.Object(
          {
            allOf: Type.Array(claimMatcher, { minItems: 1 }),
            anyOf: Type.Array(claimMatcher, { minItems: 1 }),
          },
          { ...closed, minProperties: 1 },
        ),
      ),
    ),
    /** Deprecated: same as `scopes.anyOf`; ignored when `scopes` is given. */
    requiredScopes: Type.Optional(stringList({ minItems: 1 })),
  },
  {
    ...closed,
    anyOf: [{ required: ['scopes'] }, { required: ['claims'] }, { required: ['requiredScopes'] }],
  },
);

const ruleList = Type.Array(rule, { minItems: 1 });

/** `mcp-authz` v1: rules per capability type, plus the opt-in list filtering. */
const MCP_AUTHZ_V1 = Type.Partial(
  Type.Object(
    {
      tools: ruleList,
      resources: ruleList,
      prompts: ruleList,
      methods: ruleList,
      filterLists: Type.Boolean(),
    },
    {
      ...closed,
      anyOf: [
        { required: ['tools'] },
        { required: ['resources'] },
        { required: ['prompts'] },
        { required: ['methods'] },
      ],
    },
  ),
);

export type AuthzRule = Static<typeof rule>;
export type McpAuthzParams = Static<typeof MCP_AUTHZ_V1>;
type ClaimMatcher = Static<typeof claimMatcher>;

type AuthzDecision =
  | { governed: false }
  | { governed: true; allowed: boolean; missingScopes: string[] };

type Capability = 'tools' | 'resources' | 'prompts';

const NOT_GOVERNED: AuthzDecision = { governed: false };

/** `tools/call` → tools, `resources/read` → resources...; other methods are not governed. */
function capabilityOf(method: string): Capability | undefined {
  const [prefix, action, extra] = method.split('/');
  if (action === undefined || extra !== undefined) return undefined;
  return prefix === 'tools' || prefix === 'resources' || prefix === 'prompts' ? prefix : undefined;
}

function claimMatches(payload: JWTPayload, matcher: ClaimMatcher): boolean {
  const value = payload[matcher.claim];
  const present = Array.isArray(value)
    ? value.map(String)
    : value === undefined
      ? []
      : [String(value)];
  return matcher.values.some((v) => present.includes(v));
}

/** Missing scopes of one rule (empty when the scope part passes) and whether its claims pass. */
function evaluateRule(
  rule: AuthzRule,
  token: VerifiedToken,
): { missing: string[]; claimsOk: boolean } {
  const missing: string[] = [];
  const allOf = rule.scopes?.allOf ?? [];
  const anyOf = rule.scopes ? (rule.scopes.anyOf ?? []) : (rule.requiredScopes ?? []);
  for (const scope of allOf) if (!token.scopes.has(scope)) missing.push(scope);
  if (anyOf.length > 0 && !anyOf.some((s) => token.scopes.has(s))) missing.push(...anyOf);
  const claimsAll = rule.claims?.allOf ?? [];
  const claimsAny = rule.claims?.anyOf ?? [];
  const claimsOk =
    claimsAll.every((m) => claimMatches(token.payload, m)) &&
    (claimsAny.length === 0 || claimsAny.some((m) => claimMatches(token.payload, m)));
  return { missing, claimsOk };
}

/** Every scope a rule list mentions, in order of first appearance. */
function scopesOfRules(params: McpAuthzParams): string[] {
  const scopes = new Set<string>();
  for (const list of [params.tools, params.resources, params.prompts, params.methods]) {
    for (const r of list ?? []) {
      for (const s of [
        ...(r.scopes?.allOf ?? []),
        ...(r.scopes?.anyOf ?? []),
        ...(r.requiredScopes ?? []),
      ]) {
        scopes.add(s);
      }
    }
  }
  return [...scopes];
}

/**
 * `mcp-authz` v1 for one proxy. A call is governed when at least one rule matches it (exact,
 * case-sensitive name or `*` among its capability's rules, or a `methods` rule naming its
 * method or `*`); every matching rule must pass. Ungoverned calls pass untouched.
 */
class McpAuthzPolicy implements Policy {
  readonly scopes: readonly string[];
  readonly onListItem?: Policy['onListItem'];

  constructor(private readonly params: McpAuthzParams) {
    this.scopes = scopesOfRules(params);
    if (params.filterLists)
      this.onListItem = (exchange, listMethod, item) => this.visible(exchange, listMethod, item);
  }

  onRequest(exchange: Exchange): ReturnType<Exchange['authenticate']> {
    const { call } = exchange;
    if (!call) return undefined;
    if (exchange.token) return this.authorize(exchange, call);
    if (!this.decide(call, undefined).governed) return undefined;
    // Governance is decided before identity (WSO2 #2842): only a governed call needs a
    // caller, even when mcp-auth's own switches let this call through anonymously.
    const authenticated = exchange.authenticate();
    if (authenticated instanceof Promise) {
      return authenticated.then((refusal) => refusal ?? this.authorize(exchange, call));
    }
    return authenticated ?? this.authorize(exchange, call);
  }

  /** The decision for an authenticated caller (or one that could not be authenticated). */
  private authorize(exchange: Exchange, call: McpCall): Refusal | undefined {
    const decision = this.decide(call, exchange.token);
    if (decision.governed && !decision.allowed) {
      return insufficientScope(exchange, decision.missingScopes, 'mcp-authz denied the call');
    }
    return undefined;
  }

  private matchingRules(call: Pick<McpCall, 'method' | 'target'>): AuthzRule[] {
    const capability = capabilityOf(call.method);
    if (!capability) return [];
    const byName =
      call.target === ''
        ? []
        : (this.params[capability] ?? []).filter((r) => r.name === call.target || r.name === '*');
    const byMethod = (this.params.methods ?? []).filter(
      (r) => r.name === call.method || r.name === '*',
    );
    return byMethod.length === 0 ? byName : [...byName, ...byMethod];
  }

  /** Decides a call; `token` is undefined when the caller is not authenticated. */
  private decide(
    call: Pick<McpCall, 'method' | 'target'>,
    token: VerifiedToken | undefined,
  ): AuthzDecision {
    const rules = this.matchingRules(call);
    if (rules.length === 0) return NOT_GOVERNED;
    if (!token) return { governed: true, allowed: false, missingScopes: [] };
    const missing = new Set<string>();
    let allowed = true;
    for (const r of rules) {
      const result = evaluateRule(r, token);
      for (const scope of result.missing) missing.add(scope);
      if (result.missing.length > 0 || !result.claimsOk) allowed = false;
    }
    return { governed: true, allowed, missingScopes: [...missing].sort() };
  }

  /** Whether a listed item would be callable by this caller. */
  private visible(exchange: Exchange, listMethod: ListMethod, item: Record<string, unknown>) {
    const [method, key] = LIST_ITEM_CALL[listMethod];
    const target = typeof item[key] === 'string' ? (item[key] as string) : '';
    const decision = this.decide({ method, target }, exchange.token);
    return !decision.governed || decision.allowed;
  }
}

export const mcpAuthz = definePolicy({
  name: 'mcp-authz',
  versions: { v1: MCP_AUTHZ_V1 },
  phase: 1,
  create: (params) => new McpAuthzPolicy(params),
});
