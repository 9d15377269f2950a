import type { FastifyInstance } from 'fastify';
import type { OAuthRouteOptions } from './options.js';

/** The signing keys (RFC 7517 JWK Set), cached briefly so rotation reaches verifiers soon. */
export function registerJwksRoute(app: FastifyInstance, options: OAuthRouteOptions): void {
  const { keys } = options;
  app.get('/oauth2/jwks', async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=60').send({ keys: keys.publishedKeys() }),
  );
}
