import { performance } from 'node:perf_hooks';
import { pipeline } from 'node:stream/promises';
import { type JsonRpcId, jsonRpcError, type Logger } from '@mcp-identity/common';
import type { FastifyInstance, FastifyReply, FastifyRequest, LogLevel } from 'fastify';
import type { Dispatcher } from 'undici';
import { admit } from './admission.js';
import type { VerifiedToken } from './auth/verifier.js';
import { downstreamHeaders, isCompressed, upstreamHeaders } from './forwarding-headers.js';
import { type McpCall, parseMcpBody, requestIdOf } from './jsonrpc.js';
import { filterJsonBody, type ItemPredicate, SseListFilter } from './list-filter.js';
import type { GatewayMetrics } from './metrics.js';
import type { Refusal } from './policies/challenge.js';
import { LIST_ITEM_CALL, LIST_RESULT_KEY, type ListMethod } from './policies/mcp-authz.js';
import type { ProxyRegistry, ProxyRuntime } from './registry.js';

const PRM_SUFFIX = '/.well-known/oauth-protected-resource';

/** Rewrites the items of a list result the caller may not use (`filterLists`). */
interface ListFilter {
  key: string;
  keep: ItemPredicate;
}

export interface DataPlaneOptions {
  registry: ProxyRegistry;
  metrics: GatewayMetrics;
  audit: Logger;
  maxRequestBodyBytes: number;
}

/** One audit record per MCP request; never holds a token. */
interface AuditRecord {
  proxy: string;
  httpMethod: string;
  method: string;
  tool?: string;
  subject?: string;
  clientId?: string;
  decision: 'allowed' | 'unauthenticated' | 'forbidden' | 'bad_request' | 'upstream_error';
  missingScopes?: string[];
  /** Why a request was refused (never the token itself). */
  reason?: string;
  upstreamStatus?: number;
  latencyMs?: number;
}

/** Who is calling, for the audit record: the configured user claim and the OAuth client. */
function identify(record: AuditRecord, token: VerifiedToken, userIdClaim: string): void {
  const subject = token.payload[userIdClaim];
  if (typeof subject === 'string') record.subject = subject;
  const clientId = token.payload.azp ?? token.payload.client_id;
  if (typeof clientId === 'string') record.clientId = clientId;
}

function isListMethod(method: string): method is ListMethod {
  return Object.hasOwn(LIST_ITEM_CALL, method);
}

/** Lenient look at a body for the audit log when no policy asked for strict parsing. */
function peekCall(body: Buffer | undefined): McpCall | undefined {
  if (!body || body.length === 0) return undefined;
  const parsed = parseMcpBody(body);
  return parsed.ok ? parsed.call : undefined;
}

/** Serves `<context>/mcp` and protected resource metadata for every deployed proxy. */
export function registerDataPlane(app: FastifyInstance, options: DataPlaneOptions): void {
  // A child scope, so its raw-body parsing does not touch sibling routes (health).
  // Oversized bodies are refused by Fastify with 413 through the app's error handler.
  app.register(async (scope) => dataPlaneRoutes(scope, options));
}

function dataPlaneRoutes(app: FastifyInstance, options: DataPlaneOptions): void {
  const { registry, metrics, audit } = options;

  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    '*',
    { parseAs: 'buffer', bodyLimit: options.maxRequestBodyBytes },
    (_request, body, done) => done(null, body),
  );

  const finish = (record: AuditRecord, started: number) => {
    record.latencyMs = Math.round((performance.now() - started) * 100) / 100;
    metrics.record(record.proxy, record.method, record.decision, record.latencyMs / 1000);
    audit.info({ audit: record }, 'mcp request');
  };

  const refuse = (reply: FastifyReply, refusal: Refusal, record: AuditRecord, started: number) => {
    record.decision = refusal.status === 401 ? 'unauthenticated' : 'forbidden';
    record.reason = refusal.reason;
    if (refusal.missingScopes.length > 0) record.missingScopes = refusal.missingScopes;
    finish(record, started);
    return reply
      .code(refusal.status)
      .header('www-authenticate', refusal.challenge)
      .header('content-type', 'application/json')
      .send(refusal.body);
  };

  const serveMetadata = (runtime: ProxyRuntime | undefined, reply: FastifyReply) => {
    if (!runtime?.auth) {
      return reply
        .code(404)
        .send({ error: 'Not Found', message: 'No protected resource metadata here' });
    }
    return reply
      .header('cache-control', 'public, max-age=300')
      .header('access-control-allow-origin', '*')
      .send(runtime.auth.metadata(runtime.resourceUrl));
  };

  const handleMcp = async (runtime: ProxyRuntime, request: FastifyRequest, reply: FastifyReply) => {
    const started = performance.now();
    const body = Buffer.isBuffer(request.body) ? request.body : undefined;
    const record: AuditRecord = {
      proxy: runtime.id,
      httpMethod: request.method,
      method: request.method,
      decision: 'allowed',
    };
    let call: McpCall | undefined;
    const { auth, authz } = runtime;

    if (request.method === 'POST' && (auth || authz)) {
      const parsed = parseMcpBody(body ?? '');
      if (!parsed.ok) {
        record.decision = 'bad_request';
        record.method = 'invalid';
        finish(record, started);
        return reply.code(400).send(jsonRpcError(null, parsed.code, parsed.message, parsed.data));
      }
      call = parsed.call;
    } else if (request.method === 'POST') {
      call = peekCall(body);
    }
    if (call) {
      record.method = call.method || 'response';
      if (call.target) record.tool = call.target;
    }

    const admission = await admit(runtime, request.method, call, request.headers.authorization);
    const { token } = admission;
    if (token) identify(record, token, runtime.auth?.userIdClaim ?? 'sub');
    if (!admission.admitted) return refuse(reply, admission.refusal, record, started);

    const listMethod = call && isListMethod(call.method) ? call.method : undefined;
    const filter: ListFilter | undefined =
      authz?.filterLists && listMethod
        ? {
            key: LIST_RESULT_KEY[listMethod],
            keep: (item) => authz.visible(listMethod, item, token),
          }
        : undefined;
    const id = call?.id ?? requestIdOf(body);
    return forward(runtime, request, reply, body, id, record, started, filter);
  };

  const forward = async (
    runtime: ProxyRuntime,
    request: FastifyRequest,
    reply: FastifyReply,
    body: Buffer | undefined,
    id: JsonRpcId,
    record: AuditRecord,
    started: number,
    filter: ListFilter | undefined,
  ) => {
    // A client that goes away mid-request cancels the upstream request too.
    const controller = new AbortController();
    const onClientGone = () => {
      if (!reply.raw.writableFinished) controller.abort();
    };
    reply.raw.once('close', onClientGone);
    let upstream: Dispatcher.ResponseData;
    try {
      upstream = await runtime.pool.request({
        path: runtime.upstreamPath,
        method: request.method as Dispatcher.HttpMethod,
        headers: upstreamHeaders(request.headers, {
          stripAuthorization: runtime.auth ? !runtime.auth.forwardToken : false,
          // List filtering reads the body, so ask for it uncompressed.
          identityEncoding: filter !== undefined,
        }),
        body: body && body.length > 0 ? body : null,
        signal: controller.signal,
      });
    } catch (error) {
      const timedOut = (error as { code?: string }).code === 'UND_ERR_HEADERS_TIMEOUT';
      record.decision = 'upstream_error';
      request.log.warn(
        { proxy: runtime.id, err: (error as Error).message },
        'upstream request failed',
      );
      finish(record, started);
      if (controller.signal.aborted) return reply;
      return reply
        .code(timedOut ? 504 : 502)
        .send(
          jsonRpcError(
            id,
            -32000,
            timedOut ? 'Upstream MCP server timed out' : 'Upstream MCP server unreachable',
          ),
        );
    }
    record.upstreamStatus = upstream.statusCode;
    if (filter && isCompressed(upstream.headers)) {
      upstream.body.destroy();
      record.decision = 'upstream_error';
      finish(record, started);
      return reply
        .code(502)
        .send(jsonRpcError(id, -32000, 'Upstream sent a compressed list that cannot be filtered'));
    }
    reply.hijack();
    const contentType = String(upstream.headers['content-type'] ?? '').toLowerCase();
    try {
      if (filter && contentType.startsWith('application/json')) {
        const raw = Buffer.from(await upstream.body.arrayBuffer());
        const filtered = filterJsonBody(raw, filter.key, filter.keep);
        const headers = downstreamHeaders(upstream.headers, true);
        headers['content-length'] = filtered.length;
        reply.raw.writeHead(upstream.statusCode, headers);
        reply.raw.end(filtered);
      } else if (filter && contentType.startsWith('text/event-stream')) {
        reply.raw.writeHead(upstream.statusCode, downstreamHeaders(upstream.headers, true));
        reply.raw.flushHeaders();
        await pipeline(upstream.body, new SseListFilter(filter.key, filter.keep), reply.raw);
      } else {
        // Never re-framed: bytes go out as they arrive, with the upstream's own headers.
        reply.raw.writeHead(upstream.statusCode, downstreamHeaders(upstream.headers, false));
        // An SSE stream may stay silent for long; the client must see its headers now.
        if (contentType.startsWith('text/event-stream')) reply.raw.flushHeaders();
        await pipeline(upstream.body, reply.raw);
      }
    } catch (error) {
      request.log.debug({ proxy: runtime.id, err: (error as Error).message }, 'stream ended early');
      upstream.body.destroy();
      reply.raw.destroy();
    }
    reply.raw.off('close', onClientGone);
    finish(record, started);
    return reply;
  };

  app.route({
    method: ['GET', 'POST', 'DELETE', 'OPTIONS'],
    url: '/*',
    // The audit line is the access log of MCP traffic; Fastify's per-request lines would repeat
    // it. A route level replaces the configured one, so never make the route chattier.
    logLevel: quieterLevel(app.log.level, 'warn'),
    handler: async (request, reply) => {
      const path = (request.url.split('?')[0] ?? '').replace(/\/+$/, '');
      if (path.startsWith(`${PRM_SUFFIX}/`) && path.endsWith('/mcp') && request.method === 'GET') {
        return serveMetadata(
          registry.byContextPath(path.slice(PRM_SUFFIX.length, -'/mcp'.length)),
          reply,
        );
      }
      if (path.endsWith(PRM_SUFFIX) && request.method === 'GET') {
        return serveMetadata(registry.byContextPath(path.slice(0, -PRM_SUFFIX.length)), reply);
      }
      if (path.endsWith('/mcp')) {
        const runtime = registry.byContextPath(path.slice(0, -'/mcp'.length));
        if (runtime) return handleMcp(runtime, request, reply);
      }
      return reply.code(404).send({ error: 'Not Found', message: 'No MCP proxy at this path' });
    },
  });
}

const LEVELS: readonly LogLevel[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

function quieterLevel(current: string, floor: LogLevel): LogLevel {
  const index = LEVELS.indexOf(current as LogLevel);
  return index > LEVELS.indexOf(floor) ? (LEVELS[index] ?? floor) : floor;
}
