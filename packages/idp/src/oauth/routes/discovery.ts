import { TOKEN_EXCHANGE_GRANT } from '@mcp-identity/common';
import type { FastifyInstance } from 'fastify';
import type { OAuthRouteOptions } from './options.js';

/** RFC 8414 authorization server metadata, also at the path WSO2 derives from its token issuer. */
export function registerDiscoveryRoutes(app: FastifyInstance, options: OAuthRouteOptions): void {
  const { tokens, baseUrl, knownScopes, clients } = options;
  const metadata = () => {
    const base = baseUrl();
    return {
      issuer: tokens.issuer,
      authorization_endpoint: `${base}/oauth2/authorize`,
      token_endpoint: `${base}/oauth2/token`,
      jwks_uri: `${base}/oauth2/jwks`,
      registration_endpoint: `${base}/oauth2/register`,
      revocation_endpoint: `${base}/oauth2/revoke`,
      introspection_endpoint: `${base}/oauth2/introspect`,
      response_types_supported: ['code'],
      grant_types_supported: [
        'authorization_code',
        'refresh_token',
        'client_credentials',
        TOKEN_EXCHANGE_GRANT,
      ],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
      revocation_endpoint_auth_methods_supported: [
        'client_secret_basic',
        'client_secret_post',
        'none',
      ],
      introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      code_challenge_methods_supported: ['S256'],
      scopes_supported: knownScopes,
      // RFC 9207: every authorization response, errors included, carries `iss`.
      authorization_response_iss_parameter_supported: true,
      ...(clients.acceptsDocuments ? { client_id_metadata_document_supported: true } : {}),
    };
  };
  app.get('/.well-known/oauth-authorization-server/oauth2/token', async () => metadata());
  app.get('/.well-known/oauth-authorization-server', async () => metadata());
}
