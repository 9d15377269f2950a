import {
  clientNetwork,
  FixedWindowThrottle,
  oauthError,
  oauthTooManyRequests,
  reserveForAddress,
} from '@mcp-identity/common';
import type { FastifyInstance } from 'fastify';
import { MAX_REGISTRATION_BYTES, readClientMetadata } from '../registration.js';
import type { OAuthRouteOptions } from './options.js';
import { readJsonObject } from './request.js';
import { intersect, splitScope } from './scopes.js';

/** RFC 7591 dynamic registration of public authorization-code clients. */
export function registerRegistrationRoute(app: FastifyInstance, options: OAuthRouteOptions): void {
  const { apps, limits, clock, knownScopes } = options;
  const registrationsPerIp = new FixedWindowThrottle({
    limit: limits.registrationsPerIpPerHour,
    windowMs: 3_600_000,
    clock,
  });
  const registrationsPerNetwork = new FixedWindowThrottle({
    limit: limits.registrationsPerNetworkPerHour,
    windowMs: 3_600_000,
    clock,
  });
  app.post('/oauth2/register', { bodyLimit: MAX_REGISTRATION_BYTES }, async (request, reply) => {
    // Counted before any work, so parallel requests cannot all slip under the limit.
    const decision = await reserveForAddress(
      request.ip,
      registrationsPerIp,
      registrationsPerNetwork,
    );
    if (!decision.allowed) {
      return oauthTooManyRequests(
        reply,
        decision.retryAfterSeconds,
        'Too many client registrations from your address or network; try again later.',
      );
    }
    const read = readClientMetadata(readJsonObject(request));
    if (!read.ok) return oauthError(reply, 400, read.problem.error, read.problem.description);
    if (!apps.makeRoomForDynamic(limits.maxDynamicClients)) {
      return oauthError(
        reply,
        503,
        'temporarily_unavailable',
        'The server holds too many registered clients; try again later.',
      );
    }
    const { metadata } = read;
    const requested = metadata.scope === undefined ? knownScopes : splitScope(metadata.scope);
    const { app: registered } = await apps.create({
      name: metadata.name,
      public: true,
      dynamic: true,
      grantTypes: ['authorization_code', 'refresh_token'],
      scopes: intersect(requested, knownScopes),
      redirectUris: metadata.redirectUris,
      registeredFrom: clientNetwork(request.ip),
    });
    return reply
      .code(201)
      .header('cache-control', 'no-store')
      .send({
        client_id: registered.clientId,
        client_id_issued_at: registered.createdAt,
        client_name: registered.name,
        token_endpoint_auth_method: 'none',
        grant_types: registered.grantTypes,
        response_types: ['code'],
        redirect_uris: registered.redirectUris,
        scope: registered.scopes.join(' '),
      });
  });
}
