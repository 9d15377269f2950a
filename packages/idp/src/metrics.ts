import {
  countAnswers,
  counterChildren,
  createMetricsRegistry,
  grantTypeLabel,
  httpRequestMetrics,
  InternalError,
  METRICS_PATH,
  outcomeOfStatus,
  recordHttpRequests,
  registerMetricsRoute,
} from '@mcp-identity/common';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TokenService } from './auth/tokens.js';
import { admitBearer } from './scim/routes.js';
import { findAccessRule } from './scim/scopes.js';
import type { ScimWrite } from './scim/write-log.js';
import { GRANT_TYPES } from './store/apps.js';

/** Grant types counted by name; any other `grant_type` is counted as `other`. */
const COUNTED_GRANT_TYPES: ReadonlySet<string> = new Set(GRANT_TYPES);

/** What a submitted login form came to: a redirect with a code is a sign-in. */
function loginOutcome(status: number, location: unknown): string {
  if (status === 302 || status === 303) {
    return typeof location === 'string' && /[?&]code=/.test(location) ? 'success' : 'refused';
  }
  return status === 401 ? 'failure' : outcomeOfStatus(status, 303);
}

/** `/scim2/v2/Roles/:id` → `Roles`; requests that matched no SCIM route → `unmatched`. */
function scimResource(route: string): string {
  return route.replace(/^\/scim2\/(?:v2\/)?/, '').split('/')[0] || 'unmatched';
}

/**
 * The IdP's metrics, read from each response once it is sent so that no route's code changes:
 * process metrics, `idp_http_*` per route, and
 * - `idp_token_requests_total{grant_type, outcome}` — `POST /oauth2/token`;
 * - `idp_login_attempts_total{outcome}` — the login form's post (`POST /oauth2/authorize`);
 * - `idp_scim_requests_total{resource, method, status}` — every request under `/scim2`;
 * - `idp_scim_writes_total{resource, method, status, actor}` — SCIM writes, counted by the SCIM
 *   routes (`countScimWrite`), which know the token's actors.
 *
 * `GET /metrics` follows the IdP's access model: a bearer token the IdP issued holding the
 * scope of its rule in `scim/scopes.ts` (`internal_metrics_view`), e.g. a client-credentials
 * application for the scraper.
 */
export function registerIdpMetrics(
  app: FastifyInstance,
  tokens: TokenService,
): { countScimWrite: (write: ScimWrite) => void } {
  const registry = createMetricsRegistry();
  recordHttpRequests(app, httpRequestMetrics(registry, 'idp'));
  // Resource labels by route pattern: the patterns are the registered routes, a fixed few.
  const resources = new Map<string, string>();
  countAnswers(app, registry, [
    {
      name: 'idp_token_requests_total',
      help: 'Token endpoint requests, by grant type and outcome (success: tokens issued, refused, throttled, error).',
      labelNames: ['grant_type', 'outcome'],
      count: (request, reply, route) =>
        route === '/oauth2/token'
          ? [grantTypeLabel(request, COUNTED_GRANT_TYPES), outcomeOfStatus(reply.statusCode, 200)]
          : undefined,
    },
    {
      name: 'idp_login_attempts_total',
      help: 'Submitted login forms, by outcome (success, failure, throttled, refused, error).',
      labelNames: ['outcome'],
      count: (request, reply, route) =>
        route === '/oauth2/authorize' && request.method === 'POST'
          ? [loginOutcome(reply.statusCode, reply.getHeader('location'))]
          : undefined,
    },
    {
      name: 'idp_scim_requests_total',
      help: 'SCIM requests, by resource type, method and status.',
      labelNames: ['resource', 'method', 'status'],
      count(request, reply, route) {
        if (!request.url.startsWith('/scim2/')) return undefined;
        let resource = resources.get(route);
        if (resource === undefined) {
          resource = scimResource(route);
          resources.set(route, resource);
        }
        return [resource, request.method, String(reply.statusCode)];
      },
    },
  ]);
  registerMetricsRoute(app, registry, { authorize: requireMetricsScope(tokens) });
  const writes = counterChildren(registry, {
    name: 'idp_scim_writes_total',
    help: 'SCIM writes, by resource type, method, status and actor (the client that exchanged the token, RFC 8693; none when not delegated).',
    labelNames: ['resource', 'method', 'status', 'actor'],
  });
  return {
    // The actor is the outermost one: a client the operator allowed to exchange tokens, so the
    // label stays bounded (a user would not be).
    countScimWrite: (write: ScimWrite) =>
      writes(
        scimResource(write.route),
        write.method,
        String(write.status),
        write.actor[0] ?? 'none',
      ).inc(),
  };
}

/** The access rule of `GET /metrics`, checked as the SCIM valve checks its routes. */
function requireMetricsScope(tokens: TokenService) {
  const rule = findAccessRule('GET', METRICS_PATH);
  if (!rule) throw new InternalError(`IdP route GET ${METRICS_PATH} has no access rule`);
  return async (request: FastifyRequest, reply: FastifyReply) =>
    (await admitBearer(tokens, rule, request, reply)) ? undefined : reply;
}
