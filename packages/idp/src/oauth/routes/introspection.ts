import type { FastifyInstance } from 'fastify';
import { authenticateClient } from './client-auth.js';
import { failure } from './failures.js';
import type { OAuthRouteOptions } from './options.js';
import { readForm } from './request.js';

/** RFC 7662 introspection, for confidential clients only. */
export function registerIntrospectionRoute(app: FastifyInstance, options: OAuthRouteOptions): void {
  const { clients, tokens, grants } = options;
  app.post('/oauth2/introspect', async (request, reply) => {
    const form = readForm(request);
    const client = await authenticateClient(request, form, clients);
    if (!client.confidential) {
      throw failure.introspectionNeedsAuth();
    }
    const token = form.get('token');
    if (!token) throw failure.missingToken();
    reply.header('cache-control', 'no-store');
    const claims = await tokens.verify(token);
    if (claims) return { active: true, token_type: 'Bearer', ...claims };
    const refreshGrant = grants.findRefreshToken(token);
    if (refreshGrant) {
      return {
        active: true,
        token_type: 'refresh_token',
        client_id: refreshGrant.clientId,
        sub: refreshGrant.userId,
        scope: refreshGrant.scope,
        exp: refreshGrant.expiresAt,
      };
    }
    return { active: false };
  });
}
