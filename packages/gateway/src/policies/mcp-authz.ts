import type { JWTPayload } from 'jose';
import type { VerifiedToken } from '../auth/verifier.js';
import type { McpCall } from '../jsonrpc.js';

interface ClaimMatcher {
  claim: string;
  values: string[];
}

export interface AuthzRule {
  name: string;
  scopes?: { allOf?: string[]; anyOf?: string[] };
  claims?: { allOf?: ClaimMatcher[]; anyOf?: ClaimMatcher[] };
  /** Deprecated: same as `scopes.anyOf`; ignored when `scopes` is given. */
  requiredScopes?: string[];
}

export interface McpAuthzParams {
  tools?: AuthzRule[];
  resources?: AuthzRule[];
  prompts?: AuthzRule[];
  methods?: AuthzRule[];
  filterLists?: boolean;
}

export type AuthzDecision =
  | { governed: false }
  | { governed: true; allowed: boolean; missingScopes: string[] };

type Capability = 'tools' | 'resources' | 'prompts';

/** List methods `filterLists` applies to: the call each item stands for, and its name key. */
export const LIST_ITEM_CALL = {
  'tools/list': ['tools/call', 'name'],
  'prompts/list': ['prompts/get', 'name'],
  'resources/list': ['resources/read', 'uri'],
} as const;
export type ListMethod = keyof typeof LIST_ITEM_CALL;
export const LIST_RESULT_KEY: Record<ListMethod, string> = {
  'tools/list': 'tools',
  'prompts/list': 'prompts',
  'resources/list': 'resources',
};

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

/**
 * `mcp-authz` v1 for one proxy. A call is governed when at least one rule matches it (exact,
 * case-sensitive name or `*` among its capability's rules, or a `methods` rule naming its
 * method or `*`); every matching rule must pass. Ungoverned calls pass untouched.
 */
export class McpAuthzPolicy {
  readonly filterLists: boolean;

  constructor(private readonly params: McpAuthzParams) {
    this.filterLists = params.filterLists ?? false;
  }

  matchingRules(call: Pick<McpCall, 'method' | 'target'>): AuthzRule[] {
    const capability = capabilityOf(call.method);
    if (!capability) return [];
    const byName =
      call.target === ''
        ? []
        : (this.params[capability] ?? []).filter((r) => r.name === call.target || r.name === '*');
    const byMethod = (this.params.methods ?? []).filter(
      (r) => r.name === call.method || r.name === '*',
    );
    return [...byName, ...byMethod];
  }

  /** Decides a call; `token` is undefined when the caller is not authenticated. */
  decide(
    call: Pick<McpCall, 'method' | 'target'>,
    token: VerifiedToken | undefined,
  ): AuthzDecision {
    const rules = this.matchingRules(call);
    if (rules.length === 0) return { governed: false };
    if (!token) return { governed: true, allowed: false, missingScopes: [] };
    const missing = new Set<string>();
    let allowed = true;
    for (const rule of rules) {
      const result = evaluateRule(rule, token);
      for (const scope of result.missing) missing.add(scope);
      if (result.missing.length > 0 || !result.claimsOk) allowed = false;
    }
    return { governed: true, allowed, missingScopes: [...missing].sort() };
  }

  /** Whether a listed item would be callable with this token (for `filterLists`). */
  visible(listMethod: ListMethod, item: Record<string, unknown>, token: VerifiedToken | undefined) {
    const [method, key] = LIST_ITEM_CALL[listMethod];
    const target = typeof item[key] === 'string' ? (item[key] as string) : '';
    const decision = this.decide({ method, target }, token);
    return !decision.governed || decision.allowed;
  }
}
