import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import {
  createCors,
  type FrontHandler,
  type HttpRequestRecorder,
  type OriginPolicy,
} from '@mcp-identity/common';
import type { McpExchangeRouter } from '../mcp/exchange-router.js';
import { TRANSPORT_ERROR } from '../mcp/post-messages.js';
import { type FailureLog, sendJsonRpcError, serveMcpPost } from './mcp-post.js';
import { type RequiredHeader, requiredHeaderCheck } from './required-header.js';

export interface McpFrontOptions {
  router: McpExchangeRouter;
  path: string;
  policy: OriginPolicy;
  requiredHeader?: RequiredHeader;
  /** The app's body limit: a longer declared body is left to Fastify (413). */
  bodyLimit: number;
  log: FailureLog;
  /** Counts each answer as Fastify's hook counts the route's. */
  recordRequest?: HttpRequestRecorder;
}

/** The Content-Types SDK clients and the gateway send, which every check of the route accepts. */
const PLAIN_JSON = /^application\/json(?:; ?charset=utf-8)?$/i;

/**
 * POST `/mcp` served from the node:http server before Fastify (`createApp`'s `front`): the
 * hot path of a tool call, where Fastify's request, reply, hook and body-parser machinery cost
 * more than the transport's own checks. It takes only the requests it will serve, decided from
 * the headers before a byte of the body is read: an allowed or absent Origin, the required
 * header's value (`--require-header`), a Content-Length within the limit and a plain JSON
 * Content-Type. Every other request, refusals included, goes to Fastify's route and hooks,
 * which answer it as before — so each refusal (403 foreign Origin, 401 missing credential, 413,
 * the framework's media-type and length errors) has one implementation. Requests it serves
 * get the route's CORS headers, are counted in the HTTP metrics, and write no access log lines
 * (failures are logged).
 */
export function createMcpFront(options: McpFrontOptions): FrontHandler {
  const { router, path, policy, bodyLimit, log, recordRequest } = options;
  const applyCors = createCors({ policy, methods: ['POST'] });
  const carriesRequiredHeader = options.requiredHeader
    ? requiredHeaderCheck(options.requiredHeader)
    : undefined;
  const pathWithQuery = `${path}?`;

  const takes = (headers: IncomingHttpHeaders): boolean => {
    const { origin } = headers;
    return (
      declaredWithin(headers, bodyLimit) &&
      PLAIN_JSON.test(headers['content-type'] ?? '') &&
      (origin === undefined || policy.check(origin, headers.host)) &&
      (carriesRequiredHeader === undefined || carriesRequiredHeader(headers))
    );
  };

  return (request, response, app) => {
    const { url, headers } = request;
    if (request.method !== 'POST' || (url !== path && !url?.startsWith(pathWithQuery))) {
      return false;
    }
    if (!takes(headers)) return false;
    applyCors('POST', headers, response);
    if (recordRequest) {
      const started = performance.now();
      response.once('finish', () => {
        recordRequest('POST', path, response.statusCode, (performance.now() - started) / 1000);
      });
    }
    readText(request, (error, body) => {
      if (error) {
        sendJsonRpcError(response, 400, TRANSPORT_ERROR, error.message, app);
        return;
      }
      void serveMcpPost(router, request, response, body, log, app);
    });
    return true;
  };
}

/** Whether the body is framed by a declared length within the limit. */
function declaredWithin(headers: IncomingHttpHeaders, limit: number): boolean {
  const declared = headers['content-length'];
  if (declared === undefined || headers['transfer-encoding'] !== undefined) return false;
  // Node's parser has checked the value's syntax, and stops the body at that length.
  return Number(declared) <= limit;
}

/** The whole body as UTF-8 text (decoded once, so characters split across chunks survive). */
function readText(
  request: IncomingMessage,
  done: (error: Error | undefined, body: string | undefined) => void,
): void {
  const chunks: Buffer[] = [];
  let received = 0;
  let settled = false;
  request.on('data', (chunk: Buffer) => {
    received += chunk.length;
    chunks.push(chunk);
  });
  request.on('end', () => {
    settled = true;
    const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, received);
    done(undefined, body.toString('utf8'));
  });
  request.on('error', (error: Error) => {
    if (settled) return;
    settled = true;
    done(error, undefined);
  });
}
