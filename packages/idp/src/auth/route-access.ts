import { InternalError } from '@mcp-identity/common';
import type { FastifyInstance } from 'fastify';
import { type AccessRule, findAccessRule } from '../scim/scopes.js';

/**
 * Routes served without a bearer token: health, discovery, and the OAuth endpoints, whose
 * handlers authenticate the client themselves (RFC 6749 §2.3) or sign the user in.
 */
const PUBLIC_ROUTES: ReadonlySet<string> = new Set([
  'GET /api/health-check/v1.0/health',
  'GET /.well-known/oauth-authorization-server',
  'GET /.well-known/oauth-authorization-server/oauth2/token',
  'GET /oauth2/jwks',
  'GET /oauth2/authorize',
  'POST /oauth2/authorize',
  'POST /oauth2/token',
  'POST /oauth2/register',
  'POST /oauth2/revoke',
  'POST /oauth2/introspect',
]);

export type RouteAccess = { kind: 'public' } | { kind: 'scim'; rule: AccessRule };

/**
 * How the IdP protects a route, looked up by the method and the route pattern the router
 * matched. Undefined means the route has no rule: the server refuses to register it, and a
 * request reaching it is denied.
 */
export function routeAccess(method: string, route: string): RouteAccess | undefined {
  const asked = method === 'HEAD' ? 'GET' : method;
  if (PUBLIC_ROUTES.has(`${asked} ${route}`)) return { kind: 'public' };
  const rule = findAccessRule(method, route);
  return rule ? { kind: 'scim', rule } : undefined;
}

/**
 * Deny by default at registration: from now on `app` refuses (fails to start) any route without
 * an access rule. Returns the list of registered routes (`METHOD /pattern`), filled as they are.
 */
export function requireAccessRules(app: FastifyInstance): readonly string[] {
  const routes: string[] = [];
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      if (!routeAccess(method, route.url)) {
        throw new InternalError(`IdP route ${method} ${route.url} has no access rule`);
      }
      routes.push(`${method} ${route.url}`);
    }
  });
  return routes;
}
