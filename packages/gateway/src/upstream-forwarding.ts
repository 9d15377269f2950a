import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { type JsonRpcId, jsonRpcError } from '@mcp-identity/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Dispatcher } from 'undici';
import type { McpExchange } from './exchange.js';
import { contentEncoding, downstreamHeaders, upstreamHeaders } from './forwarding-headers.js';
import {
  filterJsonBody,
  type ItemPredicate,
  MAX_LIST_BYTES,
  SseListFilter,
} from './list-filter.js';

/** Rewrites the items of a list result the caller may not use (`filterLists`). */
export interface ListFilter {
  key: string;
  keep: ItemPredicate;
}

/** Stream errors are handled where each stream is consumed; this only keeps them from escaping. */
const ignore = () => undefined;

/** Discards an upstream body the client will not see, without an unhandled 'error'. */
function discard(body: Readable): void {
  body.on('error', ignore);
  body.destroy();
}

/** A decoder for a content coding the gateway can read (RFC 9110 §8.4.1), else undefined. */
function decoderFor(encoding: string) {
  switch (encoding) {
    case 'gzip':
    case 'x-gzip':
      return createGunzip();
    case 'deflate':
      return createInflate();
    case 'br':
      return createBrotliDecompress();
    default:
      return undefined;
  }
}

class ListTooLarge extends Error {}

async function collect(source: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of source) {
    size += chunk.length;
    if (size > MAX_LIST_BYTES) throw new ListTooLarge('list result too large to filter');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

export interface Forwarding {
  request: FastifyRequest;
  reply: FastifyReply;
  exchange: McpExchange;
  body: Buffer | undefined;
  id: JsonRpcId;
  filter: ListFilter | undefined;
  /** Writes the audit line and metrics once the exchange is over. */
  finish(exchange: McpExchange): void;
}

/**
 * Sends the request to the proxy's upstream and streams the answer back: bytes go out as they
 * arrive with the upstream's own headers, never re-framed, except list results a policy
 * filters. Every stream and socket error ends this exchange only.
 */
export async function forwardToUpstream(f: Forwarding): Promise<FastifyReply> {
  const { request, reply, exchange, filter } = f;
  const { runtime } = exchange;
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
        stripAuthorization: runtime.authenticator ? !runtime.authenticator.forwardToken : false,
        identityEncoding: filter !== undefined,
        credential: runtime.upstreamAuth,
      }),
      body: f.body && f.body.length > 0 ? f.body : null,
      signal: controller.signal,
    });
  } catch (error) {
    reply.raw.off('close', onClientGone);
    const timedOut = (error as { code?: string }).code === 'UND_ERR_HEADERS_TIMEOUT';
    exchange.decision = 'upstream_error';
    exchange.reason = timedOut ? 'upstream timed out' : 'upstream unreachable';
    request.log.warn(
      { proxy: runtime.id, err: (error as Error).message },
      'upstream request failed',
    );
    f.finish(exchange);
    if (controller.signal.aborted) return reply;
    return reply
      .code(timedOut ? 504 : 502)
      .send(
        jsonRpcError(
          f.id,
          -32000,
          timedOut ? 'Upstream MCP server timed out' : 'Upstream MCP server unreachable',
        ),
      );
  }
  exchange.upstreamStatus = upstream.statusCode;
  const contentType = String(upstream.headers['content-type'] ?? '').toLowerCase();
  const isJson = contentType.startsWith('application/json');
  const isSse = contentType.startsWith('text/event-stream');
  const filtering = filter !== undefined && (isJson || isSse);
  let decoder: ReturnType<typeof decoderFor>;
  if (filtering) {
    const encoding = contentEncoding(upstream.headers);
    decoder = decoderFor(encoding);
    if (!decoder && encoding !== 'identity') {
      // A list the gateway cannot read must not reach the caller unfiltered.
      discard(upstream.body);
      reply.raw.off('close', onClientGone);
      exchange.decision = 'upstream_error';
      exchange.reason = `list in unsupported content coding ${encoding}`;
      f.finish(exchange);
      return reply
        .code(502)
        .send(jsonRpcError(f.id, -32000, 'Upstream sent a list the gateway cannot filter'));
    }
  }
  reply.hijack();
  const raw = reply.raw;
  try {
    if (filtering && isJson) {
      let decoded: Buffer = Buffer.alloc(0);
      const sink = async (source: AsyncIterable<Buffer>) => {
        decoded = await collect(source);
      };
      if (decoder) await pipeline(upstream.body, decoder, sink);
      else await pipeline(upstream.body, sink);
      const filtered = filterJsonBody(decoded, filter.key, filter.keep);
      const headers = downstreamHeaders(upstream.headers, true);
      headers['content-length'] = filtered.length;
      raw.writeHead(upstream.statusCode, headers);
      raw.end(filtered);
    } else if (filtering) {
      raw.writeHead(upstream.statusCode, downstreamHeaders(upstream.headers, true));
      raw.flushHeaders();
      const sse = new SseListFilter(filter.key, filter.keep);
      if (decoder) await pipeline(upstream.body, decoder, sse, raw);
      else await pipeline(upstream.body, sse, raw);
    } else {
      raw.writeHead(upstream.statusCode, downstreamHeaders(upstream.headers, false));
      // An SSE stream may stay silent for long; the client must see its headers now.
      if (isSse) raw.flushHeaders();
      await pipeline(upstream.body, raw);
    }
  } catch (error) {
    request.log.debug({ proxy: runtime.id, err: (error as Error).message }, 'stream ended early');
    decoder?.destroy();
    discard(upstream.body);
    if (raw.headersSent) {
      raw.destroy();
    } else {
      // Only a list being read for filtering fails before its headers went out.
      exchange.decision = 'upstream_error';
      exchange.reason = error instanceof ListTooLarge ? error.message : 'unreadable list result';
      raw.writeHead(502, { 'content-type': 'application/json' });
      raw.end(JSON.stringify(jsonRpcError(f.id, -32000, 'Upstream list could not be filtered')));
    }
  }
  raw.off('close', onClientGone);
  f.finish(exchange);
  return reply;
}
