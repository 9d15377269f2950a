import {
  counterChildren,
  createMetricsRegistry,
  grantTypeLabel,
  InternalError,
  instrumentHttp,
  METRICS_PATH,
  outcomeOfStatus,
  registerMetricsRoute,
  routeLabel,
} from '@mcp-identity/common';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TokenService } from './auth/tokens.js';
import { admitBearer } from './scim/routes.js';
import { findAccessRule } from './scim/scopes.js';
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
 * - `idp_scim_requests_total{resource, method, status}` — every request under `/scim2`.
 *
 * `GET /metrics` follows the IdP's access model: a bearer token the IdP issued holding the
 * scope of its rule in `scim/scopes.ts` (`internal_metrics_view`), e.g. a client-credentials
 * application for the scraper.
 */
export function registerIdpMetrics(app: FastifyInstance, tokens: TokenService): void {
  const registry = createMetricsRegistry();
  instrumentHttp(app, registry, 'idp');
  const tokenRequests = counterChildren(registry, {
    name: 'idp_token_requests_total',
    help: 'Token endpoint requests, by grant type and outcome (success: tokens issued, refused, throttled, error).',
    labelNames: ['grant_type', 'outcome'] as const,
  });
  const logins = counterChildren(registry, {
    name: 'idp_login_attempts_total',
    help: 'Submitted login forms, by outcome (success, failure, throttled, refused, error).',
    labelNames: ['outcome'] as const,
  });
  const scimRequests = counterChildren(registry, {
    name: 'idp_scim_requests_total',
    help: 'SCIM requests, by resource type, method and status.',
    labelNames: ['resource', 'method', 'status'] as const,
  });
  // Resource labels by route pattern: the patterns are the registered routes, a fixed few.
  const resources = new Map<string, string>();
  // A callback hook, not an async one: no promise per request for a few counter increments.
  app.addHook('onResponse', (request, reply, done) => {
    const route = routeLabel(request);
    if (route === '/oauth2/token') {
      tokenRequests(
        grantTypeLabel(request, COUNTED_GRANT_TYPES),
        outcomeOfStatus(reply.statusCode, 200),
      ).inc();
    } else if (route === '/oauth2/authorize' && request.method === 'POST') {
      logins(loginOutcome(reply.statusCode, reply.getHeader('location'))).inc();
    } else if (request.url.startsWith('/scim2/')) {
      let resource = resources.get(route);
      if (resource === undefined) {
        resource = scimResource(route);
        resources.set(route, resource);
      }
      scimRequests(resource, request.method, String(reply.statusCode)).inc();
    }
    done();
  });
  registerMetricsRoute(app, registry, { authorize: requireMetricsScope(tokens) });
}

/** The access rule of `GET /metrics`, checked as the SCIM valve checks its routes. */
function requireMetricsScope(tokens: TokenService) {
  const rule = findAccessRule('GET', METRICS_PATH);
  if (!rule) throw new InternalError(`IdP route GET ${METRICS_PATH} has no access rule`);
  return async (request: FastifyRequest, reply: FastifyReply) =>
    (await admitBearer(tokens, rule, request, reply)) ? undefined : reply;
}
