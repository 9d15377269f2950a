import { type Static, Type } from '@sinclair/typebox';
import type { JWTPayload } from 'jose';
import type { VerifiedToken } from '../auth/verifier.js';
import { type Capability, ITEM_CALL, type McpCall } from '../data-plane/jsonrpc.js';
import { insufficientScope } from './challenge.js';
import { definePolicy } from './define-policy.js';
import type { CallerNeeds, Exchange, Policy, Verdict } from './policy.js';
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

const NOT_GOVERNED: AuthzDecision = { governed: false };
const ALLOWED: AuthzDecision = { governed: true, allowed: true, missingScopes: [] };

const CAPABILITIES: readonly Capability[] = ['tools', 'resources', 'prompts'];

/** What a rule is matched against: a call, or the call a listed item stands for. */
type Target = Pick<McpCall, 'method' | 'kind' | 'target'>;

function claimMatches(payload: JWTPayload, matcher: ClaimMatcher): boolean {
  const value = payload[matcher.claim];
  const present = Array.isArray(value)
    ? value.map(String)
    : value === undefined
      ? []
      : [String(value)];
  return matcher.values.some((v) => present.includes(v));
}

function claimsPass(rule: AuthzRule, payload: JWTPayload): boolean {
  const claimsAll = rule.claims?.allOf ?? [];
  const claimsAny = rule.claims?.anyOf ?? [];
  return (
    claimsAll.every((m) => claimMatches(payload, m)) &&
    (claimsAny.length === 0 || claimsAny.some((m) => claimMatches(payload, m)))
  );
}

/**
 * Whether a token passes one rule: every `scopes.allOf`, one of `scopes.anyOf` (or of the
 * deprecated `requiredScopes`), then the claim matchers. The one statement of a rule's meaning,
 * for calls, list filtering and the scopes a 403 names: given `missing`, the scopes the token
 * lacks are added to it (a rule failing on its claims alone adds none).
 */
function rulePasses(rule: AuthzRule, token: VerifiedToken, missing?: string[]): boolean {
  const { scopes } = token;
  let passes = true;
  for (const scope of rule.scopes?.allOf ?? NO_SCOPES) {
    if (scopes.has(scope)) continue;
    if (!missing) return false;
    missing.push(scope);
    passes = false;
  }
  const anyOf = (rule.scopes ? rule.scopes.anyOf : rule.requiredScopes) ?? NO_SCOPES;
  if (anyOf.length > 0 && !anyOf.some((s) => scopes.has(s))) {
    if (!missing) return false;
    missing.push(...anyOf);
    passes = false;
  }
  return passes && (rule.claims === undefined || claimsPass(rule, token.payload));
}

const NO_SCOPES: readonly string[] = [];

/** The rules with this name or `*`, in their configured order. */
function rulesNamed(rules: readonly AuthzRule[], name: string): AuthzRule[] {
  return rules.filter((r) => r.name === name || r.name === '*');
}

/**
 * Which rules match a call, worked out once per proxy: every name a rule list spells gets its
 * list of matching rules (with the `*` ones), any other name the `*` rules alone, so finding a
 * call's rules is a map lookup however many calls are made.
 */
class RuleIndex {
  private readonly byName = new Map<Capability, Map<string, AuthzRule[]>>();
  private readonly anyName = new Map<Capability, AuthzRule[]>();
  private readonly byMethod = new Map<string, AuthzRule[]>();
  private readonly anyMethod: AuthzRule[];
  /** A capability's name rules followed by a method's rules, by those two lists. */
  private readonly joined = new Map<AuthzRule[], Map<AuthzRule[], AuthzRule[]>>();

  constructor(params: McpAuthzParams) {
    for (const capability of CAPABILITIES) {
      const rules = params[capability] ?? [];
      this.byName.set(capability, new Map(rules.map((r) => [r.name, rulesNamed(rules, r.name)])));
      this.anyName.set(capability, rulesNamed(rules, '*'));
    }
    const methods = params.methods ?? [];
    for (const r of methods) this.byMethod.set(r.name, rulesNamed(methods, r.name));
    this.anyMethod = rulesNamed(methods, '*');
  }

  /** The rules matching a call (exact, case-sensitive name, or `*`); never to be modified. */
  rulesFor(call: Target): readonly AuthzRule[] {
    const { capability } = call.kind;
    if (!capability) return NO_RULES;
    const byName =
      call.target === ''
        ? NO_RULES
        : (this.byName.get(capability)?.get(call.target) ?? this.anyName.get(capability) ?? []);
    const byMethod = this.byMethod.get(call.method) ?? this.anyMethod;
    if (byMethod.length === 0) return byName;
    if (byName.length === 0) return byMethod;
    let withName = this.joined.get(byName);
    if (!withName) {
      withName = new Map();
      this.joined.set(byName, withName);
    }
    let both = withName.get(byMethod);
    if (!both) {
      both = [...byName, ...byMethod];
      withName.set(byMethod, both);
    }
    return both;
  }
}

const NO_RULES: AuthzRule[] = [];

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
  private readonly rules: RuleIndex;

  constructor(params: McpAuthzParams) {
    this.scopes = scopesOfRules(params);
    this.rules = new RuleIndex(params);
    if (params.filterLists) this.onListItem = (exchange, item) => this.visible(exchange, item);
  }

  /** Governance is decided before identity (WSO2 #2842): a governed call needs a caller. */
  readonly callers: CallerNeeds = {
    transport: false,
    everyCall: false,
    call: (call) => this.rules.rulesFor(call).length > 0,
  };

  onRequest(exchange: Exchange): Verdict {
    const { call } = exchange;
    if (!call) return undefined;
    const decision = this.decide(call, exchange.token);
    if (decision.governed && !decision.allowed) {
      return insufficientScope(exchange, decision.missingScopes, 'mcp-authz denied the call');
    }
    return undefined;
  }

  /** Decides a call; `token` is undefined when the caller is not authenticated. */
  private decide(call: Target, token: VerifiedToken | undefined): AuthzDecision {
    const rules = this.rules.rulesFor(call);
    if (rules.length === 0) return NOT_GOVERNED;
    if (!token) return { governed: true, allowed: false, missingScopes: [] };
    let allPass = true;
    for (const rule of rules) {
      if (rulePasses(rule, token)) continue;
      allPass = false;
      break;
    }
    if (allPass) return ALLOWED;
    const missing: string[] = [];
    for (const rule of rules) rulePasses(rule, token, missing);
    return { governed: true, allowed: false, missingScopes: [...new Set(missing)].sort() };
  }

  /** Whether a listed item would be callable by this caller. */
  private visible(exchange: Exchange, item: Record<string, unknown>): boolean {
    const capability = exchange.call?.kind.capability;
    if (!capability) return true;
    const { method, kind, nameKey } = ITEM_CALL[capability];
    const name = item[nameKey];
    const decision = this.decide(
      { method, kind, target: typeof name === 'string' ? name : '' },
      exchange.token,
    );
    return !decision.governed || decision.allowed;
  }
}

export const mcpAuthz = definePolicy({
  name: 'mcp-authz',
  versions: { v1: MCP_AUTHZ_V1 },
  phase: 1,
  create: (params) => new McpAuthzPolicy(params),
});
