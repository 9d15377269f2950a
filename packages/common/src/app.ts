import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyServerOptions,
} from 'fastify';
import type { Logger } from './logger.js';
import { traceFastifyRequests, tracingEnabled } from './tracing.js';

/** What a front handler may know of the app it stands in front of. */
export interface AppState {
  /** Shutdown has begun: answers should ask clients to close their connection. */
  readonly closing: boolean;
}

/**
 * Offered every request before Fastify routes it. Returns true when it took the request (and
 * answers it); false leaves the request to Fastify untouched. For a hot path whose per-request
 * cost Fastify's request, reply and hook machinery would dominate.
 */
export type FrontHandler = (
  request: IncomingMessage,
  response: ServerResponse,
  app: AppState,
) => boolean;

export interface AppOptions {
  logger: Logger;
  /** PEM certificate and key: the app serves HTTPS. */
  https?: { cert: string; key: string };
  /** Trust X-Forwarded-* headers (only behind a proxy you control). */
  trustProxy?: boolean;
  /** Largest accepted request body in bytes (Fastify's default is 1 MiB). */
  bodyLimit?: number;
  /** Serves the requests it takes on the same listener, before Fastify sees them. */
  front?: FrontHandler;
}

/**
 * A Fastify instance with the conventions every service shares: our logger,
 * 503 while closing, and error/404 replies that never carry a stack trace.
 * Services replace the handlers where their surface has its own error shape.
 */
export function createApp(options: AppOptions): FastifyInstance {
  // Once closing has begun, responses ask clients to drop keep-alive connections:
  // a connection that finishes an in-flight request would otherwise stay open
  // and hold shutdown until its idle timeout.
  const state = { closing: false };
  const { front } = options;
  const app = Fastify({
    loggerInstance: options.logger,
    trustProxy: options.trustProxy ?? false,
    bodyLimit: options.bodyLimit,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    ...(front
      ? { serverFactory: frontServerFactory(front, state, options.https) }
      : { https: options.https ?? null }),
  }) as unknown as FastifyInstance; // the HTTPS variant is used through the same API

  // A span per routed request, only while tracing is on (decided before any app is made).
  if (tracingEnabled()) traceFastifyRequests(app);
  app.addHook('preClose', async () => {
    state.closing = true;
  });
  app.addHook('onSend', async (_request, reply) => {
    if (state.closing) reply.header('connection', 'close');
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const status = error.statusCode && error.statusCode >= 400 ? error.statusCode : 500;
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    return reply.code(status).send(errorReplyBody(status, error.message));
  });
  app.setNotFoundHandler((request, reply) =>
    reply
      .code(404)
      .send({ error: 'not_found', message: `Route ${request.method} ${request.url} not found` }),
  );
  return app;
}

interface ServerSettings {
  keepAliveTimeout: number;
  requestTimeout: number;
  connectionTimeout: number;
  maxRequestsPerSocket: number;
}

/**
 * The server that Fastify would make, with `front` offered each request first. Once closing has
 * begun every request goes to Fastify, which answers 503 with `connection: close`.
 */
function frontServerFactory(
  front: FrontHandler,
  state: AppState,
  tls: AppOptions['https'],
): NonNullable<FastifyServerOptions['serverFactory']> {
  return (fastifyHandler, options) => {
    // Fastify has filled in its defaults by the time it calls the factory.
    const settings = options as unknown as ServerSettings;
    const handle = (request: IncomingMessage, response: ServerResponse) => {
      if (state.closing || !front(request, response, state)) fastifyHandler(request, response);
    };
    const server: Server = tls ? createHttpsServer(tls, handle) : createServer(handle);
    // The timeouts Fastify sets on the servers it makes itself.
    server.keepAliveTimeout = settings.keepAliveTimeout;
    server.requestTimeout = settings.requestTimeout;
    server.setTimeout(settings.connectionTimeout);
    if (settings.maxRequestsPerSocket > 0)
      server.maxRequestsPerSocket = settings.maxRequestsPerSocket;
    return server;
  };
}

/**
 * The body of an error answer in the shape every service shares: the status's name and the
 * message, or a generic one for server errors (never a stack trace or an internal detail).
 */
export function errorReplyBody(
  status: number,
  message: string,
): { error: string; message: string } {
  if (status >= 500) return { error: 'internal_error', message: 'Internal server error' };
  return { error: errorName(status), message };
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
