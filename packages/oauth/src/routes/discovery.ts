import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { SCOPE } from '../options.js';

/** RFC 9728: the same document at the root and at the path derived from `<issuer>/mcp`. */
export function protectedResourceMetadata(issuer: string) {
  return {
    resource: `${issuer}/mcp`,
    authorization_servers: [issuer],
    scopes_supported: [SCOPE],
  };
}

/** RFC 8414, with Area A's fixed values; the additive fields describe behaviour the server really has. */
export function authorizationServerMetadata(
  issuer: string,
  hasJwks: boolean,
  clientIdMetadata = false,
) {
  return {
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    registration_endpoint: `${issuer}/oauth/register`,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_methods_supported: ['none'],
    code_challenge_methods_supported: ['S256'],
    scopes_supported: [SCOPE],
    authorization_response_iss_parameter_supported: true,
    ...(clientIdMetadata ? { client_id_metadata_document_supported: true } : {}),
    ...(hasJwks ? { jwks_uri: `${issuer}/oauth/jwks` } : {}),
  };
}

export function registerDiscoveryRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const prm = async (request: Parameters<ServerContext['issuer']>[0]) =>
    protectedResourceMetadata(ctx.issuer(request));
  app.get('/.well-known/oauth-protected-resource', prm);
  app.get('/.well-known/oauth-protected-resource/mcp', prm);
  app.get('/.well-known/oauth-authorization-server', async (request) =>
    authorizationServerMetadata(
      ctx.issuer(request),
      ctx.jwks !== undefined,
      ctx.clientDocuments !== undefined,
    ),
  );
  const jwks = ctx.jwks;
  if (jwks !== undefined) {
    app.get('/oauth/jwks', async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=300');
      return jwks();
    });
  }
}
