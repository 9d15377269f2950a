import { FixedWindowThrottle, isJsonObject, jsonRpcError } from '@mcp-identity/common';
import { type Static, Type } from '@sinclair/typebox';
import { parseDurationMs } from '../durations.js';
import { definePolicy } from './define-policy.js';
import type { Exchange, Policy, PolicySetup, Refusal } from './policy.js';
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
  throttle: FixedWindowThrottle;
  limit: number;
  windowMs: number;
  /** `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers): `<limit>;w=<seconds>`. */
  policyHeader: string;
}

interface CompiledRule {
  name: string;
  limiters: Limiter[];
}

function compile(rules: LimitRule[] | undefined, clock: () => number): CompiledRule[] {
  return (rules ?? []).map((rule) => ({
    name: rule.name,
    limiters: rule.limits.map(({ limit, duration }) => {
      const windowMs = parseDurationMs(duration) as number;
      return {
        throttle: new FixedWindowThrottle({ limit, windowMs, clock }),
        limit,
        windowMs,
        policyHeader: `${limit};w=${Math.ceil(windowMs / 1000)}`,
      };
    }),
  }));
}

/**
 * `mcp-ratelimit` v1 for one proxy. Each rule counts per tool (a `*` rule counts each tool
 * apart) and per caller: the authenticated subject, else the client's address. A call over
 * any of its limits gets 429 with `Retry-After` and a JSON-RPC error, before the upstream.
 */
class McpRateLimitPolicy implements Policy {
  private readonly tools: CompiledRule[];
  private readonly methods: CompiledRule[];

  constructor(params: McpRateLimitParams, setup: PolicySetup) {
    this.tools = compile(params.tools, setup.now);
    this.methods = compile(params.methods, setup.now);
  }

  onRequest(exchange: Exchange): Refusal | undefined {
    const { call } = exchange;
    if (!call || call.method === '') return undefined;
    // Attempts counted so far, given back if a later limit refuses the call (all or nothing).
    let taken: Array<[FixedWindowThrottle, string]> | undefined;
    let caller: string | undefined;
    const check = (rules: CompiledRule[], name: string, key: string): Refusal | undefined => {
      for (const rule of rules) {
        if (rule.name !== name && rule.name !== '*') continue;
        caller ??= exchange.callerKey();
        const counted = `${key}|${caller}`;
        for (const limiter of rule.limiters) {
          const decision = limiter.throttle.reserve(counted);
          if (!decision.allowed) {
            for (const [throttle, k] of taken ?? []) throttle.release(k);
            return tooManyRequests(exchange, rule, limiter, decision.retryAfterSeconds);
          }
          taken ??= [];
          taken.push([limiter.throttle, counted]);
        }
      }
      return undefined;
    };
    if (call.method === 'tools/call' && this.tools.length > 0) {
      const refusal = check(this.tools, call.target, `tool|${call.target}`);
      if (refusal) return refusal;
    }
    return this.methods.length > 0
      ? check(this.methods, call.method, `method|${call.method}`)
      : undefined;
  }
}

/** 429 in WSO2's shape: JSON-RPC error -32000, `Retry-After` and the rate-limit headers. */
function tooManyRequests(
  exchange: Exchange,
  rule: CompiledRule,
  limiter: Limiter,
  retryAfter: number,
): Refusal {
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
