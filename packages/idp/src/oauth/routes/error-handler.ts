import { OAuthError, oauthError, sendOAuthError } from '@mcp-identity/common';
import type { FastifyError, FastifyInstance } from 'fastify';
import { MAX_REGISTRATION_BYTES } from '../registration.js';
import { failure } from './failures.js';

const REGISTRATION = '/oauth2/register';

/** Answers every failure of the OAuth routes as an RFC 6749 §5.2 error body. */
export function registerOAuthErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof OAuthError) return sendOAuthError(reply, error);
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      // RFC 7591 §3.2.2 answers every unacceptable registration with a 400 and its code.
      return request.routeOptions.url === REGISTRATION
        ? oauthError(
            reply,
            400,
            'invalid_client_metadata',
            `The registration request is larger than ${MAX_REGISTRATION_BYTES} bytes`,
          )
        : oauthError(reply, 413, 'invalid_request', 'Request body too large');
    }
    if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      // A Content-Type that is no type/subtype (RFC 9110 §8.3.1) is refused by Fastify before
      // the route reads its body: it is answered as any other media type the endpoint does not
      // take (RFC 6749 §5.2 invalid_request, RFC 7591 §3.2.2 invalid_client_metadata).
      return sendOAuthError(
        reply,
        request.routeOptions.url === REGISTRATION ? failure.notJson() : failure.notForm(),
      );
    }
    request.log.error({ err: error }, 'OAuth request failed');
    return oauthError(reply, 500, 'server_error', 'Internal server error');
  });
}
