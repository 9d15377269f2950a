import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { type JsonRpcId, jsonRpcError, type Logger } from '@mcp-identity/common';
import type { Dispatcher } from 'undici';
import type { McpExchange } from './exchange.js';
import { contentEncoding, downstreamHeaders, upstreamHeaders } from './forwarding-headers.js';
import {
  filterJsonBody,
  type ItemPredicate,
  MAX_LIST_BYTES,
  SseListFilter,
} from './list-filter.js';
import type { McpHttp } from './mcp-http.js';

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

const EVENT_STREAM = 'text/event-stream';

/**
 * Whether a Content-Type names an SSE stream, in any case (RFC 9110 §8.3.1). A lower-cased copy
 * is made only of a value that starts with a `t` yet not with the lower-case spelling.
 */
function isEventStream(contentType: string): boolean {
  if (contentType.startsWith(EVENT_STREAM)) return true;
  return (
    (contentType.charCodeAt(0) | 0x20) === 0x74 &&
    contentType.slice(0, EVENT_STREAM.length).toLowerCase() === EVENT_STREAM
  );
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
  http: McpHttp;
  exchange: McpExchange;
  /** Where upstream failures are logged. */
  log: Logger;
  id: JsonRpcId;
  filter: ListFilter | undefined;
  /** Writes the audit line and metrics once the exchange is over. */
  finish(exchange: McpExchange): void;
}

/** How the upstream request failed, for the audit line and the client's answer. */
function upstreamFailure(f: Forwarding, error: unknown): { status: 502 | 504; message: string } {
  const { exchange } = f;
  const timedOut = (error as { code?: string }).code === 'UND_ERR_HEADERS_TIMEOUT';
  exchange.decision = 'upstream_error';
  exchange.reason = timedOut ? 'upstream timed out' : 'upstream unreachable';
  f.log.warn(
    { reqId: f.http.id, proxy: exchange.runtime.id, err: (error as Error).message },
    'upstream request failed',
  );
  return timedOut
    ? { status: 504, message: 'Upstream MCP server timed out' }
    : { status: 502, message: 'Upstream MCP server unreachable' };
}

/** The request the gateway sends upstream for this exchange. */
function upstreamRequest(f: Forwarding): Dispatcher.DispatchOptions {
  const { runtime } = f.exchange;
  const { body } = f.http;
  return {
    path: runtime.upstreamPath,
    method: f.http.method as Dispatcher.HttpMethod,
    headers: upstreamHeaders(f.http.headers, {
      httpVersion: f.http.request.httpVersion,
      stripAuthorization: runtime.authenticator ? !runtime.authenticator.forwardToken : false,
      identityEncoding: f.filter !== undefined,
      credential: runtime.upstreamAuth,
    }),
    body: body && body.length > 0 ? body : null,
  };
}

/**
 * Sends the request to the proxy's upstream and streams the answer back: bytes go out as they
 * arrive with the upstream's own headers, never re-framed, except list results a policy
 * filters. Every stream and socket error ends this exchange only.
 */
export function forwardToUpstream(f: Forwarding): Promise<void> | undefined {
  if (f.filter !== undefined) return forwardFiltered(f, f.filter);
  f.exchange.runtime.pool.dispatch(upstreamRequest(f), new PassThroughHandler(f));
  return undefined;
}

const CLIENT_GONE = 'client closed the connection';

/**
 * The unfiltered path, on undici's dispatch API: each chunk is written to the client as it
 * arrives, with backpressure through the dispatch controller, so no body stream, pipeline or
 * AbortController is made per request. A JSON body's last chunk is held back and written with
 * the end of the response, so a small answer leaves in one socket write with its headers.
 */
class PassThroughHandler implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined = undefined;
  private held: Buffer | undefined = undefined;
  private streaming = false;
  private settled = false;

  constructor(private readonly f: Forwarding) {
    f.http.response.on('close', this.onClientClose);
  }

  /** A client that goes away mid-request cancels the upstream request too. */
  private readonly onClientClose = () => {
    if (!this.f.http.response.writableFinished) this.controller?.abort(new Error(CLIENT_GONE));
  };

  private readonly onDrain = () => this.controller?.resume();

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.f.http.response.destroyed) controller.abort(new Error(CLIENT_GONE));
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    const { http, exchange } = this.f;
    exchange.upstreamStatus = statusCode;
    http.writeHead(statusCode, downstreamHeaders(headers, false, http.ownHeaders));
    const contentType = headers['content-type'];
    // An SSE stream may stay silent for long; the client must see its headers and every event
    // now.
    this.streaming = typeof contentType === 'string' && isEventStream(contentType);
    if (this.streaming) http.response.flushHeaders();
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const raw = this.f.http.response;
    let out = chunk;
    if (!this.streaming) {
      out = this.held as Buffer;
      this.held = chunk;
      if (out === undefined) return;
    }
    if (!raw.write(out)) {
      controller.pause();
      raw.once('drain', this.onDrain);
    }
  }

  onResponseEnd(): void {
    this.f.http.response.end(this.held);
    this.held = undefined;
    this.settle();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    const { f } = this;
    this.held = undefined;
    const raw = f.http.response;
    if (raw.headersSent) {
      f.log.debug(
        { reqId: f.http.id, proxy: f.exchange.runtime.id, err: error.message },
        'stream ended early',
      );
      raw.destroy();
    } else if (raw.destroyed) {
      upstreamFailure(f, error);
    } else {
      const { status, message } = upstreamFailure(f, error);
      f.http.sendJson(status, jsonRpcError(f.id, -32000, message));
    }
    this.settle();
  }

  private settle(): void {
    if (this.settled) return;
    this.settled = true;
    this.f.http.response.off('close', this.onClientClose);
    this.f.http.response.off('drain', this.onDrain);
    this.f.finish(this.f.exchange);
  }
}

/** The `filterLists` path: a list result is read, filtered and written back. */
async function forwardFiltered(f: Forwarding, filter: ListFilter): Promise<void> {
  const { http, exchange } = f;
  const { runtime } = exchange;
  const raw = http.response;
  // A client that goes away mid-request cancels the upstream request too.
  const controller = new AbortController();
  const onClientGone = () => {
    if (!raw.writableFinished) controller.abort();
  };
  raw.once('close', onClientGone);
  let upstream: Dispatcher.ResponseData;
  try {
    upstream = await runtime.pool.request({
      ...upstreamRequest(f),
      signal: controller.signal,
    });
  } catch (error) {
    raw.off('close', onClientGone);
    const { status, message } = upstreamFailure(f, error);
    f.finish(exchange);
    if (controller.signal.aborted) return;
    return http.sendJson(status, jsonRpcError(f.id, -32000, message));
  }
  exchange.upstreamStatus = upstream.statusCode;
  const contentType = String(upstream.headers['content-type'] ?? '').toLowerCase();
  const isJson = contentType.startsWith('application/json');
  const isSse = isEventStream(contentType);
  const filtering = filter !== undefined && (isJson || isSse);
  let decoder: ReturnType<typeof decoderFor>;
  if (filtering) {
    const encoding = contentEncoding(upstream.headers);
    decoder = decoderFor(encoding);
    if (!decoder && encoding !== 'identity') {
      // A list the gateway cannot read must not reach the caller unfiltered.
      discard(upstream.body);
      raw.off('close', onClientGone);
      exchange.decision = 'upstream_error';
      exchange.reason = `list in unsupported content coding ${encoding}`;
      f.finish(exchange);
      return http.sendJson(
        502,
        jsonRpcError(f.id, -32000, 'Upstream sent a list the gateway cannot filter'),
      );
    }
  }
  try {
    if (filtering && isJson) {
      let decoded: Buffer = Buffer.alloc(0);
      const sink = async (source: AsyncIterable<Buffer>) => {
        decoded = await collect(source);
      };
      if (decoder) await pipeline(upstream.body, decoder, sink);
      else await pipeline(upstream.body, sink);
      const filtered = filterJsonBody(decoded, filter.key, filter.keep);
      const headers = downstreamHeaders(upstream.headers, true, http.ownHeaders);
      headers.push('content-length', String(filtered.length));
      http.writeHead(upstream.statusCode, headers);
      raw.end(filtered);
    } else if (filtering) {
      http.writeHead(
        upstream.statusCode,
        downstreamHeaders(upstream.headers, true, http.ownHeaders),
      );
      raw.flushHeaders();
      const sse = new SseListFilter(filter.key, filter.keep);
      if (decoder) await pipeline(upstream.body, decoder, sse, raw);
      else await pipeline(upstream.body, sse, raw);
    } else {
      http.writeHead(
        upstream.statusCode,
        downstreamHeaders(upstream.headers, false, http.ownHeaders),
      );
      // An SSE stream may stay silent for long; the client must see its headers now.
      if (isSse) raw.flushHeaders();
      await pipeline(upstream.body, raw);
    }
  } catch (error) {
    f.log.debug(
      { reqId: http.id, proxy: runtime.id, err: (error as Error).message },
      'stream ended early',
    );
    decoder?.destroy();
    discard(upstream.body);
    if (raw.headersSent) {
      raw.destroy();
    } else {
      // Only a list being read for filtering fails before its headers went out.
      exchange.decision = 'upstream_error';
      exchange.reason = error instanceof ListTooLarge ? error.message : 'unreadable list result';
      http.sendJson(502, jsonRpcError(f.id, -32000, 'Upstream list could not be filtered'));
    }
  }
  raw.off('close', onClientGone);
  f.finish(exchange);
}
