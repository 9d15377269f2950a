import {
  bearerChallenge,
  bearerToken,
  CountingHistogram,
  constantTimeEqual,
  countAnswers,
  createMetricsRegistry,
  DURATION_BUCKETS,
  grantTypeLabel,
  type HttpRequestRecorder,
  httpRequestMetrics,
  outcomeOfStatus,
  recordHttpRequests,
  registerMetricsRoute,
} from '@mcp-identity/common';
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onRequestAsyncHookHandler,
} from 'fastify';
import { Counter, type Registry } from 'prom-client';
import { LOGIN_PATH } from './auth/app-login.js';
import type { ToolCatalog } from './tools/catalog.js';

/** The bearer token a scraper presents to `GET /metrics`; unset, the route does not exist. */
export const METRICS_TOKEN_ENV = 'ARAZZO_MCP_METRICS_TOKEN';

export function metricsTokenFromEnv(env: Record<string, string | undefined>): string | undefined {
  const token = env[METRICS_TOKEN_ENV]?.trim();
  return token ? token : undefined;
}

const GRANT_TYPES = new Set(['authorization_code', 'refresh_token']);

/**
 * Lets a scrape through only with `Authorization: Bearer <token>` (RFC 6750 §2.1), the token a
 * credential that grants nothing but the metrics; compared in constant time.
 */
function requireMetricsToken(token: string): onRequestAsyncHookHandler {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const presented = bearerToken(request.headers.authorization);
    if (presented !== undefined && constantTimeEqual(presented, token)) return;
    reply
      .code(401)
      .header('www-authenticate', bearerChallenge({ realm: 'metrics' }))
      .send({ error: 'unauthorized', message: 'A metrics token is required' });
    return reply;
  };
}

/** The login form re-rendered (200) is a refused password; a redirect with the code a sign-in. */
function oauthLoginOutcome(status: number): string {
  return status === 200 ? 'failure' : outcomeOfStatus(status, 303);
}

export interface ArazzoMcpMetrics {
  /** The catalog with every `tools/call` counted and timed. */
  instrument(catalog: ToolCatalog): ToolCatalog;
  /**
   * Counts the app's HTTP requests (and, with `--auth builtin`, its OAuth events) and serves
   * `GET /metrics` when a metrics token is set. Call before the app is ready.
   */
  register(app: FastifyInstance): void;
  /** Counts a request answered outside Fastify (`createArazzoMcpApp`'s `recordRequest`). */
  readonly recordRequest: HttpRequestRecorder;
}

/**
 * The MCP server's metrics (Area B's SCIM tool server and Area A alike): process metrics,
 * `arazzo_mcp_http_*` per route, `arazzo_mcp_tool_calls_total{tool, outcome}` and
 * `arazzo_mcp_tool_duration_seconds{tool}`; with `--auth builtin`, Area A's OAuth events:
 * `arazzo_mcp_oauth_registrations_total{outcome}`, `arazzo_mcp_oauth_logins_total{flow, outcome}`
 * and `arazzo_mcp_oauth_tokens_total{grant_type, outcome}`.
 *
 * Neither mode has a credential fit for a scraper (the gateway's header and Area A's tokens
 * open `/mcp`), so `/metrics` takes one of its own: `Authorization: Bearer <token>`.
 */
export function createArazzoMcpMetrics(options: {
  token: string | undefined;
  builtinAuth: boolean;
}): ArazzoMcpMetrics {
  const registry = createMetricsRegistry();
  const recordRequest = httpRequestMetrics(registry, 'arazzo_mcp');
  const calls = new Counter({
    name: 'arazzo_mcp_tool_calls_total',
    help: 'tools/call requests, by tool and outcome (success, error result, rejected).',
    labelNames: ['tool', 'outcome'] as const,
    registers: [registry],
  });
  const duration = new CountingHistogram({
    name: 'arazzo_mcp_tool_duration_seconds',
    help: 'Time to answer a tools/call, workflow included, by tool.',
    labelNames: ['tool'] as const,
    buckets: DURATION_BUCKETS,
    registry,
  });
  return {
    instrument(catalog) {
      // Names outside the catalog share one label: a client must not grow the series.
      const series = new Map(
        [...catalog.tools.map((tool) => tool.name), 'other'].map((tool) => [
          tool,
          {
            success: calls.labels(tool, 'success'),
            error: calls.labels(tool, 'error'),
            rejected: calls.labels(tool, 'rejected'),
            duration: duration.labels(tool),
          },
        ]),
      );
      const other = series.get('other')!;
      return {
        tools: catalog.tools,
        list: () => catalog.list(),
        async call(name, args, auth) {
          const one = series.get(name) ?? other;
          const started = performance.now();
          try {
            const result = await catalog.call(name, args, auth);
            (result.isError ? one.error : one.success).inc();
            return result;
          } catch (error) {
            one.rejected.inc();
            throw error;
          } finally {
            one.duration.observe((performance.now() - started) / 1000);
          }
        },
      };
    },
    recordRequest,
    register(app) {
      recordHttpRequests(app, recordRequest);
      if (options.builtinAuth) countOAuthEvents(app, registry);
      if (options.token !== undefined) {
        registerMetricsRoute(app, registry, { authorize: requireMetricsToken(options.token) });
      }
    },
  };
}

/** Area A's OAuth events, read from the answers of its endpoints (all of them posts). */
function countOAuthEvents(app: FastifyInstance, registry: Registry): void {
  countAnswers(app, registry, [
    {
      name: 'arazzo_mcp_oauth_registrations_total',
      help: 'Dynamic client registrations (RFC 7591), by outcome.',
      labelNames: ['outcome'],
      count: (request, reply, route) =>
        request.method === 'POST' && route === '/oauth/register'
          ? [outcomeOfStatus(reply.statusCode, 200)]
          : undefined,
    },
    {
      name: 'arazzo_mcp_oauth_logins_total',
      help: 'Sign-ins, by flow (oauth: the authorization form; app: the normal login) and outcome.',
      labelNames: ['flow', 'outcome'],
      count(request, reply, route) {
        if (request.method !== 'POST') return undefined;
        const status = reply.statusCode;
        if (route === '/oauth/authorize') return ['oauth', oauthLoginOutcome(status)];
        if (route === LOGIN_PATH) {
          return ['app', status === 401 ? 'failure' : outcomeOfStatus(status, 200)];
        }
        return undefined;
      },
    },
    {
      name: 'arazzo_mcp_oauth_tokens_total',
      help: 'Token requests, by grant type and outcome (success: tokens issued).',
      labelNames: ['grant_type', 'outcome'],
      count: (request, reply, route) =>
        request.method === 'POST' && route === '/oauth/token'
          ? [grantTypeLabel(request, GRANT_TYPES), outcomeOfStatus(reply.statusCode, 200)]
          : undefined,
    },
  ]);
}
