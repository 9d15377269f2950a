import { jsonRpcError } from '@mcp-identity/common';
import { parseDurationMs } from '../durations.js';
import type { Exchange, Policy, PolicyFactory, PolicySetup, Refusal } from './policy.js';

interface Limit {
  limit: number;
  duration: string | number;
}

interface LimitRule {
  name: string;
  limits: Limit[];
}

export interface McpRateLimitParams {
  tools?: LimitRule[];
  methods?: LimitRule[];
}

const limitRules = {
  type: 'array',
  minItems: 1,
  items: {
    type: 'object',
    additionalProperties: false,
    required: ['name', 'limits'],
    properties: {
      name: { type: 'string', minLength: 1, maxLength: 256 },
      limits: {
        type: 'array',
        minItems: 1,
        maxItems: 8,
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['limit', 'duration'],
          properties: {
            limit: { type: 'integer', minimum: 1 },
            duration: { anyOf: [{ type: 'number', exclusiveMinimum: 0 }, { type: 'string' }] },
          },
        },
      },
    },
  },
};

/** `mcp-ratelimit` v1, WSO2's shape: limits per tool (`tools/call` by name) or per method. */
const MCP_RATELIMIT_V1 = {
  type: 'object',
  additionalProperties: false,
  properties: { tools: limitRules, methods: limitRules },
  anyOf: [{ required: ['tools'] }, { required: ['methods'] }],
};

/** Counters kept at most; beyond it, expired windows are dropped, then the oldest. */
const MAX_COUNTERS = 100_000;

interface Window {
  count: number;
  endsAt: number;
}

/** One limit of one rule: a fixed window per tool (or method) and caller. */
class FixedWindows {
  private readonly windows = new Map<string, Window>();
  readonly policyHeader: string;

  constructor(
    readonly limit: number,
    readonly windowMs: number,
    private readonly now: () => number,
  ) {
    this.policyHeader = `${limit};w=${Math.ceil(windowMs / 1000)}`;
  }

  /** Counts one call; returns the seconds to wait when the window is already full. */
  take(key: string): number | undefined {
    const now = this.now();
    let window = this.windows.get(key);
    if (!window || window.endsAt <= now) {
      if (!window && this.windows.size >= MAX_COUNTERS) this.prune(now);
      window = { count: 0, endsAt: now + this.windowMs };
      this.windows.set(key, window);
    }
    if (window.count >= this.limit) return Math.max(1, Math.ceil((window.endsAt - now) / 1000));
    window.count += 1;
    return undefined;
  }

  private prune(now: number): void {
    for (const [key, window] of this.windows) if (window.endsAt <= now) this.windows.delete(key);
    const excess = this.windows.size - MAX_COUNTERS + 1;
    if (excess <= 0) return;
    let dropped = 0;
    for (const key of this.windows.keys()) {
      if (dropped++ >= excess) break;
      this.windows.delete(key);
    }
  }
}

interface CompiledRule {
  name: string;
  windows: FixedWindows[];
}

function compile(rules: LimitRule[] | undefined, now: () => number): CompiledRule[] {
  return (rules ?? []).map((rule) => ({
    name: rule.name,
    windows: rule.limits.map(
      (l) => new FixedWindows(l.limit, parseDurationMs(l.duration) as number, now),
    ),
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
    let caller: string | undefined;
    if (call.method === 'tools/call') {
      for (const rule of this.tools) {
        if (rule.name !== call.target && rule.name !== '*') continue;
        caller ??= exchange.callerKey();
        const refusal = this.take(rule, `t|${call.target}|${caller}`, exchange);
        if (refusal) return refusal;
      }
    }
    for (const rule of this.methods) {
      if (rule.name !== call.method && rule.name !== '*') continue;
      caller ??= exchange.callerKey();
      const refusal = this.take(rule, `m|${call.method}|${caller}`, exchange);
      if (refusal) return refusal;
    }
    return undefined;
  }

  private take(rule: CompiledRule, key: string, exchange: Exchange): Refusal | undefined {
    for (const windows of rule.windows) {
      const retryAfter = windows.take(key);
      if (retryAfter === undefined) continue;
      return {
        status: 429,
        headers: {
          'retry-after': String(retryAfter),
          'x-ratelimit-limit': String(windows.limit),
          'x-ratelimit-remaining': '0',
          'ratelimit-policy': windows.policyHeader,
        },
        body: jsonRpcError(exchange.call?.id ?? null, -32000, 'Rate limit exceeded', {
          retryAfterSeconds: retryAfter,
        }),
        decision: 'rate_limited',
        reason: `mcp-ratelimit: ${rule.name} over ${windows.limit} per ${windows.windowMs} ms`,
        missingScopes: [],
      };
    }
    return undefined;
  }
}

export const mcpRateLimit: PolicyFactory = {
  name: 'mcp-ratelimit',
  versions: { v1: MCP_RATELIMIT_V1 },
  phase: 2,
  create: (params, setup) => new McpRateLimitPolicy(params as McpRateLimitParams, setup),
  check(params) {
    const problems: Array<[string, string]> = [];
    for (const group of ['tools', 'methods'] as const) {
      const rules = (params as McpRateLimitParams)[group];
      if (!Array.isArray(rules)) continue;
      rules.forEach((rule, i) => {
        (Array.isArray(rule?.limits) ? rule.limits : []).forEach((limit, j) => {
          const ms = parseDurationMs(limit?.duration);
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
};
