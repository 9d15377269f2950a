import type { FastifyInstance } from 'fastify';
import { authenticateClient } from './client-auth.js';
import { failure } from './failures.js';
import type { OAuthRouteOptions } from './options.js';
import { readForm } from './request.js';

/**
 * RFC 7009 revocation: an access token of the calling client is revoked, anything else is tried
 * as one of its refresh tokens; the answer is 200 either way (RFC 7009 §2.2).
 */
export function registerRevocationRoute(app: FastifyInstance, options: OAuthRouteOptions): void {
  const { clients, tokens, grants } = options;
  app.post('/oauth2/revoke', async (request, reply) => {
    const form = readForm(request);
    const client = await authenticateClient(request, form, clients);
    const token = form.get('token');
    if (!token) throw failure.missingToken();
    const claims = await tokens.verify(token);
    if (claims && claims.client_id === client.clientId) tokens.revoke(claims);
    else grants.revokeRefreshToken(token, client.clientId);
    return reply.header('cache-control', 'no-store').send();
  });
}
