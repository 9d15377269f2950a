import type { FastifyInstance } from 'fastify';
import { registerAuthorizeRoute } from './authorize.js';
import { createAuthorizeFlow } from './authorize-flow.js';
import { registerDiscoveryRoutes } from './discovery.js';
import { registerOAuthErrorHandler } from './error-handler.js';
import { registerIntrospectionRoute } from './introspection.js';
import { registerJwksRoute } from './jwks.js';
import { registerLoginRoute } from './login.js';
import type { OAuthRouteOptions } from './options.js';
import { registerRegistrationRoute } from './register.js';
import { registerRevocationRoute } from './revocation.js';
import { registerTokenRoute } from './token.js';

export { DEFAULT_OAUTH_LIMITS, type OAuthLimits, type OAuthRouteOptions } from './options.js';

/** The OAuth 2.0 endpoints under /oauth2 plus RFC 8414 metadata. */
export async function oauthRoutes(app: FastifyInstance, options: OAuthRouteOptions): Promise<void> {
  registerOAuthErrorHandler(app);
  registerDiscoveryRoutes(app, options);
  registerJwksRoute(app, options);
  registerTokenRoute(app, options);
  registerRevocationRoute(app, options);
  registerIntrospectionRoute(app, options);
  registerRegistrationRoute(app, options);
  const flow = createAuthorizeFlow(options);
  registerAuthorizeRoute(app, flow);
  registerLoginRoute(app, options, flow);
}
