import { OAuthError, oauthError } from '@mcp-identity/common';
import type { FastifyError, FastifyInstance } from 'fastify';
import { MAX_REGISTRATION_BYTES } from '../registration.js';

/** Answers every failure of the OAuth routes as an RFC 6749 §5.2 error body. */
export function registerOAuthErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof OAuthError) {
      if (error.basicChallenge) reply.header('www-authenticate', 'Basic realm="oauth2"');
      return oauthError(reply, error.status, error.code, error.description);
    }
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      // RFC 7591 §3.2.2 answers every unacceptable registration with a 400 and its code.
      return request.routeOptions.url === '/oauth2/register'
        ? oauthError(
            reply,
            400,
            'invalid_client_metadata',
            `The registration request is larger than ${MAX_REGISTRATION_BYTES} bytes`,
          )
        : oauthError(reply, 413, 'invalid_request', 'Request body too large');
    }
    request.log.error({ err: error }, 'OAuth request failed');
    return oauthError(reply, 500, 'server_error', 'Internal server error');
  });
}
