import {
  isJsonObject,
  jsonRpcError,
  sha256Base64Url,
  type Throttle,
  type ThrottleDecision,
  type ThrottleFactory,
} from '@mcp-identity/common';
import { type Static, Type } from '@sinclair/typebox';
import { parseDurationMs } from '../durations.js';
import { serviceUnavailable } from './challenge.js';
import { definePolicy } from './define-policy.js';
import type { Exchange, Policy, PolicySetup, Refusal, Verdict } from './policy.js';
import { closed } from './schema-parts.js';

const limitRules = Type.Array(
  Type.Object(
    {
      name: Type.String({ minLength: 1, maxLength: 256 }),
      limits: Type.Array(
        Type.Object(
          {
            limit: Type.Integer({ minimum: 1 }),
            duration: Type.Union([Type.Number({ exclusiveMinimum: 0 }), Type.String()]),
          },
          closed,
        ),
        { minItems: 1, maxItems: 8 },
      ),
    },
    closed,
  ),
  { minItems: 1 },
);

/** `mcp-ratelimit` v1, WSO2's shape: limits per tool (`tools/call` by name) or per method. */
const MCP_RATELIMIT_V1 = Type.Partial(
  Type.Object(
    { tools: limitRules, methods: limitRules },
    { ...closed, anyOf: [{ required: ['tools'] }, { required: ['methods'] }] },
  ),
);

export type McpRateLimitParams = Static<typeof MCP_RATELIMIT_V1>;
type LimitRule = Static<typeof limitRules>[number];

/** One limit of one rule, counted per tool (or method) and caller. */
interface Limiter {
  throttle: Throttle;
  limit: number;
  windowMs: number;
  /** `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers): `<limit>;w=<seconds>`. */
  policyHeader: string;
}

interface CompiledRule {
  name: string;
  limiters: Limiter[];
}

/** One attempt a call takes: from this limiter, under this key. */
interface Attempt {
  rule: CompiledRule;
  limiter: Limiter;
  key: string;
}

/** Longer keys (a long tool name or subject) are counted by their hash, to bound the store. */
const MAX_PLAIN_KEY_LENGTH = 256;
/** How soon a caller refused because the counters cannot be reached may try again. */
const STORE_RETRY_AFTER_SECONDS = 2;

function compile(
  group: 'tools' | 'methods',
  rules: LimitRule[] | undefined,
  throttles: ThrottleFactory,
): CompiledRule[] {
  return (rules ?? []).map((rule, i) => ({
    name: rule.name,
    limiters: rule.limits.map(({ limit, duration }, j) => {
      const windowMs = parseDurationMs(duration) as number;
      return {
        // Named by position: each limit of each rule is a counter of its own.
        throttle: throttles({ name: `${group}[${i}].limits[${j}]`, limit, windowMs }),
        limit,
        windowMs,
        policyHeader: `${limit};w=${Math.ceil(windowMs / 1000)}`,
      };
    }),
  }));
}

/**
 * Gives back the attempts a call took before one of its limits refused it (all or nothing).
 * Best effort: a counter that cannot be reached keeps them, which only errs on the safe side.
 */
function giveBack(attempts: readonly Attempt[], count: number): void {
  for (const { limiter, key } of attempts.slice(0, count)) {
    try {
      void Promise.resolve(limiter.throttle.release(key)).catch(() => undefined);
    } catch {
      // the counter is unreachable: see above
    }
  }
}

/**
 * `mcp-ratelimit` v1 for one proxy. Each rule counts per tool (a `*` rule counts each tool
 * apart) and per caller: the authenticated subject, else the client's address. A call over
 * any of its limits gets 429 with `Retry-After` and a JSON-RPC error, before the upstream.
 * The counters are the gateway's (`PolicySetup.throttles`): in process memory, answered
 * synchronously, or shared by every process and instance; when those cannot be reached the
 * call is refused with 503 rather than let through uncounted.
 */
class McpRateLimitPolicy implements Policy {
  private readonly tools: CompiledRule[];
  private readonly methods: CompiledRule[];

  constructor(params: McpRateLimitParams, setup: PolicySetup) {
    this.tools = compile('tools', params.tools, setup.throttles);
    this.methods = compile('methods', params.methods, setup.throttles);
  }

  onRequest(exchange: Exchange): Verdict {
    const { call } = exchange;
    if (!call || call.method === '') return undefined;
    let attempts: Attempt[] | undefined;
    let caller: string | undefined;
    const match = (rules: CompiledRule[], name: string, counted: string) => {
      for (const rule of rules) {
        if (rule.name !== name && rule.name !== '*') continue;
        caller ??= exchange.callerKey();
        let key = `${counted}|${caller}`;
        if (key.length > MAX_PLAIN_KEY_LENGTH) key = `sha256:${sha256Base64Url(key)}`;
        attempts ??= [];
        for (const limiter of rule.limiters) attempts.push({ rule, limiter, key });
      }
    };
    if (call.kind.callsItem && call.kind.capability === 'tools' && this.tools.length > 0) {
      match(this.tools, call.target, `tool|${call.target}`);
    }
    if (this.methods.length > 0) match(this.methods, call.method, `method|${call.method}`);
    return attempts ? reserve(exchange, attempts, 0) : undefined;
  }
}

/**
 * Takes the call's attempts in order from `from` on, synchronously for as long as the counters
 * answer synchronously; the refusal of the first limit that is full, or undefined.
 */
function reserve(exchange: Exchange, attempts: readonly Attempt[], from: number): Verdict {
  for (let i = from; i < attempts.length; i += 1) {
    const attempt = attempts[i] as Attempt;
    let decision: ThrottleDecision | Promise<ThrottleDecision>;
    try {
      decision = attempt.limiter.throttle.reserve(attempt.key);
    } catch {
      return unavailable(exchange, attempts, i);
    }
    if (decision instanceof Promise) {
      return decision.then(
        (settled) =>
          settled.allowed
            ? reserve(exchange, attempts, i + 1)
            : tooManyRequests(exchange, attempts, i, settled.retryAfterSeconds),
        () => unavailable(exchange, attempts, i),
      );
    }
    if (!decision.allowed) {
      return tooManyRequests(exchange, attempts, i, decision.retryAfterSeconds);
    }
  }
  return undefined;
}

/** 429 in WSO2's shape: JSON-RPC error -32000, `Retry-After` and the rate-limit headers. */
function tooManyRequests(
  exchange: Exchange,
  attempts: readonly Attempt[],
  refusedAt: number,
  retryAfter: number,
): Refusal {
  giveBack(attempts, refusedAt);
  const { rule, limiter } = attempts[refusedAt] as Attempt;
  return {
    status: 429,
    headers: {
      'retry-after': String(retryAfter),
      'x-ratelimit-limit': String(limiter.limit),
      'x-ratelimit-remaining': '0',
      'ratelimit-policy': limiter.policyHeader,
    },
    body: jsonRpcError(exchange.call?.id ?? null, -32000, 'Rate limit exceeded', {
      retryAfterSeconds: retryAfter,
    }),
    decision: 'rate_limited',
    reason: `mcp-ratelimit: ${rule.name} over ${limiter.limit} per ${limiter.windowMs} ms`,
    missingScopes: [],
  };
}

/** 503: the shared counters cannot be reached, so the call cannot be counted (fail closed). */
function unavailable(exchange: Exchange, attempts: readonly Attempt[], failedAt: number): Refusal {
  giveBack(attempts, failedAt);
  return serviceUnavailable(
    exchange,
    STORE_RETRY_AFTER_SECONDS,
    'Rate limit cannot be checked; retry later',
    'mcp-ratelimit: the rate-limit counters are unreachable',
  );
}

export const mcpRateLimit = definePolicy({
  name: 'mcp-ratelimit',
  versions: { v1: MCP_RATELIMIT_V1 },
  phase: 2,
  create: (params, setup) => new McpRateLimitPolicy(params, setup),
  check(params) {
    const problems: Array<[string, string]> = [];
    for (const group of ['tools', 'methods'] as const) {
      const rules = params[group];
      if (!Array.isArray(rules)) continue;
      rules.forEach((rule: unknown, i) => {
        const limits = isJsonObject(rule) && Array.isArray(rule.limits) ? rule.limits : [];
        limits.forEach((limit: unknown, j) => {
          const ms = parseDurationMs(isJsonObject(limit) ? limit.duration : undefined);
          if (ms === undefined || ms < 1000) {
            problems.push([
              `${group}[${i}].limits[${j}].duration`,
              'must be a duration of at least 1s such as 30s, 1m or 1h',
            ]);
          }
        });
      });
    }
    return problems;
  },
});
