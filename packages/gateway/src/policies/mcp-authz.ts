import { compileSchema, jsonRpcError, McpIdentityError } from '@mcp-identity/common';
import { type Static, Type } from '@sinclair/typebox';
import type { JWTPayload } from 'jose';
import type { VerifiedToken } from '../auth/verifier.js';
import {
  type Capability,
  decodeMirrored,
  ITEM_CALL,
  type McpCall,
  methodKind,
  modernVersionOf,
} from '../data-plane/jsonrpc.js';
import { insufficientScope } from './challenge.js';
import {
  type Condition,
  ConditionError,
  type ConditionInput,
  ConditionProblem,
  compileCondition,
  MAX_CONDITION_LENGTH,
} from './conditions.js';
import { definePolicy } from './define-policy.js';
import type { CallerNeeds, Exchange, Policy, Refusal, Verdict } from './policy.js';
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
    /** CEL: the call is allowed only if this is true (`policies/conditions.ts`). */
    when: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_CONDITION_LENGTH })),
    /** CEL: the call is refused if this is true. */
    unless: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_CONDITION_LENGTH })),
  },
  {
    ...closed,
    anyOf: [
      { required: ['scopes'] },
      { required: ['claims'] },
      { required: ['requiredScopes'] },
      { required: ['when'] },
      { required: ['unless'] },
    ],
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
      /** `deny`: a tool, prompt or resource no rule names (nor `*`) is refused. Default `allow`. */
      defaultAction: Type.Union([Type.Literal('allow'), Type.Literal('deny')]),
    },
    {
      ...closed,
      anyOf: [
        { required: ['tools'] },
        { required: ['resources'] },
        { required: ['prompts'] },
        { required: ['methods'] },
        { required: ['defaultAction'] },
      ],
    },
  ),
);

export type AuthzRule = Static<typeof rule>;
export type McpAuthzParams = Static<typeof MCP_AUTHZ_V1>;
type ClaimMatcher = Static<typeof claimMatcher>;

/** A rule with its conditions compiled (once, when the proxy is deployed). */
interface CompiledRule extends AuthzRule {
  readonly whenCondition: Condition | undefined;
  readonly unlessCondition: Condition | undefined;
}

/** Why a call is refused: by a rule's scopes or claims, by its conditions, or by no rule. */
type Refused = {
  governed: true;
  allowed: false;
  missingScopes: string[];
  /** The rule that refused (none when `defaultAction: deny` found no rule). */
  rule: string | undefined;
  /** `scopes`: a token with more scopes would pass (step-up); `condition`: it would not. */
  by: 'scopes' | 'condition' | 'default';
  reason: string;
};

type AuthzDecision = { governed: false } | { governed: true; allowed: true } | Refused;

const NOT_GOVERNED: AuthzDecision = { governed: false };
const ALLOWED: AuthzDecision = { governed: true, allowed: true };

const CAPABILITIES: readonly Capability[] = ['tools', 'resources', 'prompts'];

/** What a rule is matched against: a call, or the call a listed item stands for. */
type Target = Pick<McpCall, 'method' | 'kind' | 'target'>;

/**
 * When a decision is made, and so which conditions it evaluates: `all` for a call whose body
 * is read (legacy era, explain); `headers` for a modern call before its body is read and `list`
 * for a listed item, which leave the conditions over arguments undecided (a listed tool stays);
 * `body` for a modern call once its body is read, which evaluates only those.
 */
type Stage = 'all' | 'headers' | 'body' | 'list';

/** Who calls and what, as a decision reads it. */
interface Subject {
  token: VerifiedToken;
  stage: Stage;
  /** The conditions' context, made the first time a condition needs it. */
  input: () => ConditionInput;
  /** At the `headers` stage, the arguments the request mirrors into its headers, if any. */
  mirrored?: () => MirroredArguments | undefined;
}

/** Arguments as a modern request's `Mcp-Param-*` headers state them, ahead of its body. */
interface MirroredArguments {
  /** The arguments, as far as the headers tell them (`call.arguments` at the header stage). */
  values: Map<string, unknown>;
  /** The argument paths (joined by NUL) whose every value the headers tell. */
  paths: ReadonlySet<string>;
}

const pathKey = (path: readonly string[]) => path.join('\0');

/**
 * A mirrored header's value as its argument's JSON value, read by the annotated property's
 * schema type (2026-07-28 "Custom Headers from Tool Parameters": strings as they are, booleans
 * and numbers in their JSON spelling); undefined when the type names no primitive.
 */
function mirroredValue(decoded: string, type: string | undefined): unknown {
  if (type === 'string') return decoded;
  if (type === 'boolean')
    return decoded === 'true' ? true : decoded === 'false' ? false : undefined;
  if (type !== 'number' && type !== 'integer') return undefined;
  const number = Number(decoded);
  return decoded.trim() !== '' && Number.isFinite(number) ? number : undefined;
}

/**
 * The arguments a modern tools/call's headers tell: every annotated argument whose header is
 * present (the body must agree, `paramMismatch`) or absent (then so is the argument, or null).
 */
function mirroredArguments(exchange: Exchange): MirroredArguments | undefined {
  const annotations = exchange.paramHeaders();
  if (!annotations || annotations.length === 0) return undefined;
  const values = new Map<string, unknown>();
  const paths = new Set<string>();
  for (const { header, path, type } of annotations) {
    const sent = exchange.headers[header];
    const decoded = typeof sent === 'string' ? decodeMirrored(sent) : undefined;
    const value = decoded === undefined ? undefined : mirroredValue(decoded, type);
    if (sent !== undefined && value === undefined) continue;
    paths.add(pathKey(path));
    if (value === undefined) continue;
    // Maps, not objects: the keys are the upstream's (`__proto__` is a key like any other).
    let at = values;
    for (const key of path.slice(0, -1)) {
      const next = at.get(key);
      if (next instanceof Map) {
        at = next;
        continue;
      }
      const inner = new Map<string, unknown>();
      at.set(key, inner);
      at = inner;
    }
    at.set(path[path.length - 1] as string, value);
  }
  return { values, paths };
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

function claimsPass(rule: AuthzRule, payload: JWTPayload): boolean {
  const claimsAll = rule.claims?.allOf ?? [];
  const claimsAny = rule.claims?.anyOf ?? [];
  return (
    claimsAll.every((m) => claimMatches(payload, m)) &&
    (claimsAny.length === 0 || claimsAny.some((m) => claimMatches(payload, m)))
  );
}

/**
 * Whether a condition is decided at this stage (`Stage`): at the header stage, one over
 * arguments is when it reads only arguments the headers mirror. Once the body is read every
 * condition over arguments is decided (again): the body's values are the ones forwarded.
 */
function decidedAt(condition: Condition, subject: Subject): boolean {
  const { stage } = subject;
  if (stage === 'all' || !condition.readsArguments) return stage !== 'body';
  if (stage === 'body') return true;
  if (stage === 'list') return false;
  const mirrored = subject.mirrored?.();
  return (
    mirrored !== undefined &&
    condition.argumentPaths.every((path) => path.length > 0 && mirrored.paths.has(pathKey(path)))
  );
}

/**
 * Why a rule's `when` / `unless` refuse the call, or undefined when they let it through: a
 * condition that cannot be evaluated refuses (fail closed). The reason names the rule and the
 * condition, never the values it read.
 */
function conditionsRefusal(rule: CompiledRule, subject: Subject): string | undefined {
  const { whenCondition, unlessCondition } = rule;
  if (whenCondition && decidedAt(whenCondition, subject)) {
    const result = whenCondition.evaluate(subject.input());
    if (result instanceof ConditionError) return `rule '${rule.name}' when: ${result.message}`;
    if (!result) return `rule '${rule.name}': its when condition is false`;
  }
  if (unlessCondition && decidedAt(unlessCondition, subject)) {
    const result = unlessCondition.evaluate(subject.input());
    if (result instanceof ConditionError) return `rule '${rule.name}' unless: ${result.message}`;
    if (result) return `rule '${rule.name}': its unless condition is true`;
  }
  return undefined;
}

/** Why a rule refuses: its scopes or claims, or its conditions (saying why). */
type RuleFailure = typeof BY_SCOPES | { reason: string };
const BY_SCOPES = 'scopes';

/**
 * Whether a token has what a rule asks of it: every `scopes.allOf`, one of `scopes.anyOf` (or
 * of the deprecated `requiredScopes`), then the claim matchers. Given `missing`, the scopes the
 * token lacks are added to it (a rule failing on its claims alone adds none).
 */
function scopesAndClaimsPass(rule: AuthzRule, token: VerifiedToken, missing?: string[]): boolean {
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

/**
 * Whether a token passes one rule: its scopes and claims (`scopesAndClaimsPass`), then its
 * `when` / `unless` conditions, evaluated only once those pass (a token with more scopes would
 * be judged again). The one statement of a rule's meaning, for calls, list filtering,
 * explanations and the scopes a 403 names (`missing`). True, or why not. At the `body` stage
 * the scopes and claims were decided from the headers already.
 */
function rulePasses(rule: CompiledRule, subject: Subject, missing?: string[]): true | RuleFailure {
  if (subject.stage !== 'body' && !scopesAndClaimsPass(rule, subject.token, missing)) {
    return BY_SCOPES;
  }
  if (rule.whenCondition === undefined && rule.unlessCondition === undefined) return true;
  const reason = conditionsRefusal(rule, subject);
  return reason === undefined ? true : { reason };
}

const NO_SCOPES: readonly string[] = [];

/** The rules with this name or `*`, in their configured order. */
function rulesNamed(rules: readonly CompiledRule[], name: string): CompiledRule[] {
  return rules.filter((r) => r.name === name || r.name === '*');
}

/** Compiles a rule's conditions; the definition was validated, so they compile. */
function compileRule(rule: AuthzRule): CompiledRule {
  const compiled = (source: string | undefined) => {
    if (source === undefined) return undefined;
    const condition = compileCondition(source);
    if (condition instanceof ConditionProblem) {
      throw new ConditionCompileError(`mcp-authz rule '${rule.name}': ${condition}`);
    }
    return condition;
  };
  return { ...rule, whenCondition: compiled(rule.when), unlessCondition: compiled(rule.unless) };
}

/** A condition that does not compile reached a policy: its definition was not validated. */
export class ConditionCompileError extends McpIdentityError {
  readonly code = 'invalid_condition';
}

/**
 * Which rules match a call, worked out once per proxy: every name a rule list spells gets its
 * list of matching rules (with the `*` ones), any other name the `*` rules alone, so finding a
 * call's rules is a map lookup however many calls are made.
 */
class RuleIndex {
  private readonly byName = new Map<Capability, Map<string, CompiledRule[]>>();
  private readonly anyName = new Map<Capability, CompiledRule[]>();
  private readonly byMethod = new Map<string, CompiledRule[]>();
  private readonly anyMethod: CompiledRule[];
  /** A capability's name rules followed by a method's rules, by those two lists. */
  private readonly joined = new Map<CompiledRule[], Map<CompiledRule[], CompiledRule[]>>();
  /** Whether some rule has a condition over arguments (decided after a modern body is read). */
  readonly readsArguments: boolean;

  constructor(params: McpAuthzParams) {
    let readsArguments = false;
    const compile = (rules: readonly AuthzRule[] | undefined) =>
      (rules ?? []).map((r) => {
        const compiled = compileRule(r);
        readsArguments ||= Boolean(
          compiled.whenCondition?.readsArguments || compiled.unlessCondition?.readsArguments,
        );
        return compiled;
      });
    for (const capability of CAPABILITIES) {
      const rules = compile(params[capability]);
      this.byName.set(capability, new Map(rules.map((r) => [r.name, rulesNamed(rules, r.name)])));
      this.anyName.set(capability, rulesNamed(rules, '*'));
    }
    const methods = compile(params.methods);
    for (const r of methods) this.byMethod.set(r.name, rulesNamed(methods, r.name));
    this.anyMethod = rulesNamed(methods, '*');
    this.readsArguments = readsArguments;
  }

  /** Whether a rule of the call's capability names its item (or is `*`). */
  namesItem(call: Target): boolean {
    const { capability } = call.kind;
    if (!capability) return false;
    return (
      (this.byName.get(capability)?.get(call.target) ?? this.anyName.get(capability) ?? []).length >
      0
    );
  }

  /** The rules matching a call (exact, case-sensitive name, or `*`); never to be modified. */
  rulesFor(call: Target): readonly CompiledRule[] {
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

const NO_RULES: CompiledRule[] = [];

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

/** The conditions' `token`: the claims, with `sub`, `client_id` and `scope` as documented. */
const tokenContexts = new WeakMap<VerifiedToken, Record<string, unknown>>();

function tokenContext(token: VerifiedToken): Record<string, unknown> {
  let context = tokenContexts.get(token);
  if (!context) {
    const { payload } = token;
    const clientId = payload.client_id ?? payload.azp;
    context = {
      ...payload,
      sub: typeof payload.sub === 'string' ? payload.sub : '',
      client_id: typeof clientId === 'string' ? clientId : '',
      scope: [...token.scopes],
    };
    tokenContexts.set(token, context);
  }
  return context;
}

/** The protocol version a request names: its `MCP-Protocol-Version` header, else ''. */
function eraOf(exchange: Exchange): string {
  const version = exchange.headers['mcp-protocol-version'];
  return typeof version === 'string' ? version : '';
}

/**
 * 403 for a call no scope would let through (a condition, or `defaultAction: deny`): a
 * JSON-RPC error naming the rule, without a step-up challenge.
 */
function conditionRefusal(exchange: Exchange, decision: Refused): Refusal {
  const message =
    decision.rule === undefined
      ? `Forbidden: no mcp-authz rule allows ${decision.reason}`
      : `Forbidden: mcp-authz rule '${decision.rule}' refused the call`;
  return {
    status: 403,
    headers: {},
    body: jsonRpcError(exchange.call?.id ?? null, -32000, message, {
      ...(decision.rule === undefined ? {} : { rule: decision.rule }),
    }),
    decision: 'forbidden',
    reason: decision.by === 'default' ? `defaultAction deny: ${decision.reason}` : decision.reason,
    missingScopes: [],
    ...(decision.rule === undefined ? {} : { rule: decision.rule }),
  };
}

/** A call to explain: what `POST .../decisions` takes (`explainAuthz`). */
export interface ExplainedCall {
  method: string;
  /** The tool or prompt name, or resource URI. */
  tool?: string;
  arguments?: unknown;
  /** The protocol version the call would name (`call.era`). */
  era?: string;
}

/** What the gateway would decide on a call, and why (`POST .../decisions`). */
export interface Explanation {
  decision: 'allowed' | 'forbidden';
  /** What the caller would get from the gateway: 403, or the upstream's answer (200). */
  status: 200 | 403;
  /** Whether an mcp-authz rule governs the call. */
  governed: boolean;
  rule?: string;
  reason?: string;
  missingScopes?: string[];
}

/**
 * `mcp-authz` v1 for one proxy. A call is governed when at least one rule matches it (exact,
 * case-sensitive name or `*` among its capability's rules, or a `methods` rule naming its
 * method or `*`), or when `defaultAction: deny` and no rule names the item it calls; every
 * matching rule must pass. Ungoverned calls pass untouched.
 */
class McpAuthzPolicy implements Policy {
  readonly scopes: readonly string[];
  readonly onListItem?: Policy['onListItem'];
  readonly onBody?: Policy['onBody'];
  private readonly rules: RuleIndex;
  private readonly denyUnruled: boolean;

  constructor(
    params: McpAuthzParams,
    private readonly proxy: string,
    private readonly now: () => number,
  ) {
    this.scopes = scopesOfRules(params);
    this.rules = new RuleIndex(params);
    this.denyUnruled = params.defaultAction === 'deny';
    if (params.filterLists) this.onListItem = (exchange, item) => this.visible(exchange, item);
    if (this.rules.readsArguments) this.onBody = (exchange) => this.judge(exchange, 'body');
  }

  /** Governance is decided before identity (WSO2 #2842): a governed call needs a caller. */
  readonly callers: CallerNeeds = {
    transport: false,
    everyCall: false,
    call: (call) => this.governs(call),
  };

  onRequest(exchange: Exchange): Verdict {
    // A modern request is decided from its headers before its body is read (pipeline.ts).
    return this.judge(exchange, modernVersionOf(exchange.headers) ? 'headers' : 'all');
  }

  /** What `POST .../decisions` answers: the decision on a call, by the code that makes it. */
  explain(token: VerifiedToken, call: ExplainedCall): Explanation {
    const kind = methodKind(call.method);
    // As the parser classifies a real call: only a method that calls an item names one.
    const target = { method: call.method, kind, target: kind.callsItem ? (call.tool ?? '') : '' };
    const decision = this.decide(target, {
      token,
      stage: 'all',
      input: () => ({
        token: tokenContext(token),
        call: { ...target, tool: target.target, arguments: call.arguments, era: call.era ?? '' },
        proxy: { name: this.proxy },
        now: this.now(),
      }),
    });
    if (!decision.governed) return { decision: 'allowed', status: 200, governed: false };
    if (decision.allowed) return { decision: 'allowed', status: 200, governed: true };
    return {
      decision: 'forbidden',
      status: 403,
      governed: true,
      ...(decision.rule === undefined ? {} : { rule: decision.rule }),
      reason: decision.reason,
      ...(decision.missingScopes.length > 0 ? { missingScopes: decision.missingScopes } : {}),
    };
  }

  private governs(call: Target): boolean {
    return this.rules.rulesFor(call).length > 0 || this.deniedUnruled(call);
  }

  /** Whether `defaultAction: deny` refuses this call: an item no rule of its capability names. */
  private deniedUnruled(call: Target): boolean {
    return this.denyUnruled && call.kind.callsItem && !this.rules.namesItem(call);
  }

  private judge(exchange: Exchange, stage: Stage): Verdict {
    const { call, token } = exchange;
    if (!call) return undefined;
    const decision = this.decide(call, token && this.subject(exchange, token, stage));
    if (!decision.governed || decision.allowed) return undefined;
    if (decision.by === 'scopes') {
      return insufficientScope(exchange, decision.missingScopes, decision.reason);
    }
    return conditionRefusal(exchange, decision);
  }

  private subject(exchange: Exchange, token: VerifiedToken, stage: Stage): Subject {
    let input: ConditionInput | undefined;
    let mirrored: MirroredArguments | undefined | null = null;
    const mirroredOnce = () => {
      if (mirrored === null) mirrored = mirroredArguments(exchange);
      return mirrored;
    };
    return {
      token,
      stage,
      ...(stage === 'headers' ? { mirrored: mirroredOnce } : {}),
      input: () => {
        if (input) return input;
        const call = exchange.call as McpCall;
        input = {
          token: tokenContext(token),
          call: {
            method: call.method,
            tool: call.target,
            arguments: stage === 'headers' ? mirroredOnce()?.values : call.params?.arguments,
            era: eraOf(exchange),
          },
          proxy: { name: this.proxy },
          now: this.now(),
        };
        return input;
      },
    };
  }

  /** Decides a call; `subject` is undefined when the caller is not authenticated. */
  private decide(call: Target, subject: Subject | undefined): AuthzDecision {
    const rules = this.rules.rulesFor(call);
    if (rules.length === 0) {
      if (!this.deniedUnruled(call)) return NOT_GOVERNED;
      const item = `${call.method} of '${call.target}'`;
      return {
        governed: true,
        allowed: false,
        missingScopes: [],
        rule: undefined,
        by: 'default',
        reason: item,
      };
    }
    if (!subject) {
      return {
        governed: true,
        allowed: false,
        missingScopes: [],
        rule: undefined,
        by: 'scopes',
        reason: 'mcp-authz denied the call',
      };
    }
    let allPass = true;
    for (const rule of rules) {
      if (rulePasses(rule, subject) === true) continue;
      allPass = false;
      break;
    }
    if (allPass) return ALLOWED;
    const missing: string[] = [];
    let scopeRule: string | undefined;
    let conditionFailure: { rule: string; reason: string } | undefined;
    for (const rule of rules) {
      const outcome = rulePasses(rule, subject, missing);
      if (outcome === BY_SCOPES) scopeRule ??= rule.name;
      else if (outcome !== true) conditionFailure ??= { rule: rule.name, reason: outcome.reason };
    }
    if (scopeRule !== undefined || !conditionFailure) {
      return {
        governed: true,
        allowed: false,
        missingScopes: [...new Set(missing)].sort(),
        rule: scopeRule,
        by: 'scopes',
        reason: 'mcp-authz denied the call',
      };
    }
    return {
      governed: true,
      allowed: false,
      missingScopes: [],
      by: 'condition',
      ...conditionFailure,
    };
  }

  /** Whether a listed item would be callable by this caller. */
  private visible(exchange: Exchange, item: Record<string, unknown>): boolean {
    const capability = exchange.call?.kind.capability;
    const { token } = exchange;
    if (!capability) return true;
    const { method, kind, nameKey } = ITEM_CALL[capability];
    const name = item[nameKey];
    const call = { method, kind, target: typeof name === 'string' ? name : '' };
    const decision = this.decide(
      call,
      token && {
        token,
        stage: 'list',
        input: () => ({
          token: tokenContext(token),
          call: { method, tool: call.target, arguments: undefined, era: eraOf(exchange) },
          proxy: { name: this.proxy },
          now: this.now(),
        }),
      },
    );
    return !decision.governed || decision.allowed;
  }
}

/** Field paths (relative to params) and problems of conditions that do not compile. */
function checkConditions(params: Record<string, unknown>): Array<[string, string]> {
  const problems: Array<[string, string]> = [];
  for (const list of ['tools', 'resources', 'prompts', 'methods'] as const) {
    const rules = params[list];
    if (!Array.isArray(rules)) continue;
    rules.forEach((r: unknown, i) => {
      for (const key of ['when', 'unless'] as const) {
        const source = (r as Record<string, unknown> | null)?.[key];
        // Too long a condition is the schema's to report.
        if (typeof source !== 'string' || source.length > MAX_CONDITION_LENGTH) continue;
        const compiled = compileCondition(source);
        if (compiled instanceof ConditionProblem) {
          problems.push([`${list}[${i}].${key}`, `invalid CEL at ${compiled}`]);
        }
      }
    });
  }
  return problems;
}

const paramsSchema = compileSchema(MCP_AUTHZ_V1);

export const mcpAuthz = definePolicy({
  name: 'mcp-authz',
  versions: { v1: MCP_AUTHZ_V1 },
  phase: 1,
  create: (params, setup) => new McpAuthzPolicy(params, setup.proxy, setup.now),
  check: (params) => checkConditions(params),
});

/**
 * What the named proxy's `mcp-authz` would decide on a call by this token (POST
 * `.../decisions`): the policy made from the stored params, deciding as on a real call.
 */
export function explainAuthz(
  params: unknown,
  proxy: string,
  now: () => number,
  token: VerifiedToken,
  call: ExplainedCall,
): Explanation {
  const policy = new McpAuthzPolicy(paramsSchema.parse(params, 'mcp-authz params'), proxy, now);
  return policy.explain(token, call);
}
