import formbody from '@fastify/formbody';
import {
  ClientIdMetadataResolver,
  OAuthError,
  oauthError,
  sendOAuthError,
} from '@mcp-identity/common';
import type { FastifyError, FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { ServerContext } from './context.js';
import { renderErrorPage, sendHtml } from './html.js';
import { createIssuerResolver } from './issuer.js';
import type { OAuthServerOptions } from './options.js';
import { resolveOptions } from './options.js';
import { registerAuthorizeRoutes } from './routes/authorize.js';
import { registerDiscoveryRoutes } from './routes/discovery.js';
import { registerRegistrationRoute } from './routes/register.js';
import { registerTokenRoute } from './routes/token.js';

/**
 * The routes' refusals (`OAuthError`s), errors raised before a handler runs (unparsable bodies,
 * unsupported content types) or by a host hook: the client gets the error shape of the
 * endpoint it called, never a stack.
 */
function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    // A refusal of a route (RFC 6749 §5.2), answered from the table both servers share.
    if (error instanceof OAuthError) return sendOAuthError(reply, error);
    // A shared state store that cannot be reached (see RedisOAuthStore): retry later.
    if (error.statusCode === 503) {
      request.log.warn({ err: error.message }, 'oauth state unavailable');
      const unavailable = 'The server is temporarily unavailable; try again shortly.';
      reply.header('retry-after', '2');
      if (request.url.split('?')[0]?.endsWith('/oauth/authorize')) {
        return sendHtml(reply, 503, renderErrorPage('Temporarily unavailable', unavailable));
      }
      return oauthError(reply, 503, 'temporarily_unavailable', unavailable);
    }
    const status =
      error.statusCode !== undefined && error.statusCode < 500 ? error.statusCode : 500;
    if (status >= 500) request.log.error({ err: error }, 'oauth endpoint failed');
    const message =
      status >= 500 ? 'The server could not complete the request.' : 'The request is malformed.';
    if (request.url.split('?')[0]?.endsWith('/oauth/authorize')) {
      return sendHtml(reply, status, renderErrorPage('Invalid authorization request', message));
    }
    return oauthError(reply, status, status >= 500 ? 'server_error' : 'invalid_request', message);
  });
}

/**
 * Area A's authorization server as an encapsulated Fastify plugin. Register it with a
 * `prefix` to mount it under a path base; the issuer then includes that prefix.
 */
export const oauthServer: FastifyPluginAsync<OAuthServerOptions> = async (app, options) => {
  const resolved = resolveOptions(options);
  const clientDocuments =
    options.clientIdMetadata === false
      ? undefined
      : new ClientIdMetadataResolver({ clock: resolved.clock, ...options.clientIdMetadata });
  if (clientDocuments !== undefined) app.addHook('onClose', () => clientDocuments.close());
  const ctx: ServerContext = {
    ...resolved,
    issuer: createIssuerResolver({
      publicUrl: options.publicUrl,
      trustProxy: options.trustProxy,
      basePath: app.prefix,
    }),
    clientDocuments,
  };
  installErrorHandler(app);
  // A host that already parses forms keeps its parser; registering a second one would throw.
  if (!app.hasContentTypeParser('application/x-www-form-urlencoded')) await app.register(formbody);
  registerDiscoveryRoutes(app, ctx);
  await registerRegistrationRoute(app, ctx);
  registerAuthorizeRoutes(app, ctx);
  registerTokenRoute(app, ctx);
};
