import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import type { Logger } from './logger.js';

export interface AppOptions {
  logger: Logger;
  /** PEM certificate and key: the app serves HTTPS. */
  https?: { cert: string; key: string };
  /** Trust X-Forwarded-* headers (only behind a proxy you control). */
  trustProxy?: boolean;
  /** Largest accepted request body in bytes (Fastify's default is 1 MiB). */
  bodyLimit?: number;
}

/**
 * A Fastify instance with the conventions every service shares: our logger,
 * 503 while closing, and error/404 replies that never carry a stack trace.
 * Services replace the handlers where their surface has its own error shape.
 */
export function createApp(options: AppOptions): FastifyInstance {
  const app = Fastify({
    loggerInstance: options.logger,
    https: options.https ?? null,
    trustProxy: options.trustProxy ?? false,
    bodyLimit: options.bodyLimit,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
  }) as unknown as FastifyInstance; // the HTTPS variant is used through the same API

  // Once closing has begun, responses ask clients to drop keep-alive connections:
  // a connection that finishes an in-flight request would otherwise stay open
  // and hold shutdown until its idle timeout.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const status = error.statusCode && error.statusCode >= 400 ? error.statusCode : 500;
    if (status >= 500) {
      request.log.error({ err: error }, 'request failed');
      return reply.code(status).send({ error: 'internal_error', message: 'Internal server error' });
    }
    return reply.code(status).send({ error: errorName(status), message: error.message });
  });
  app.setNotFoundHandler((request, reply) =>
    reply
      .code(404)
      .send({ error: 'not_found', message: `Route ${request.method} ${request.url} not found` }),
  );
  return app;
}

function errorName(status: number): string {
  switch (status) {
    case 400:
      return 'bad_request';
    case 401:
      return 'unauthorized';
    case 403:
      return 'forbidden';
    case 404:
      return 'not_found';
    case 413:
      return 'payload_too_large';
    case 415:
      return 'unsupported_media_type';
    default:
      return 'request_error';
  }
}
