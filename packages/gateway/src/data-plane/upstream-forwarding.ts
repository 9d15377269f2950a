import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { type JsonRpcId, jsonRpcError, type Logger } from '@mcp-identity/common';
import type { Dispatcher } from 'undici';
import { type ByteBudget, Reservation } from './body-budget.js';
import type { McpExchange } from './exchange.js';
import { contentEncoding, downstreamHeaders, upstreamHeaders } from './forwarding-headers.js';
import {
  filterJsonBody,
  holdListBytes,
  type ItemPredicate,
  readList,
  SseListFilter,
} from './list-filter.js';
import type { McpHttp } from './mcp-http.js';
import { FORWARDED_CONTENT_TYPE } from './request-body.js';
import type { UpstreamConnections } from './upstream-connections.js';
import {
  clientGone,
  ExchangeFailure,
  failureOf,
  UNANSWERED,
  type UpstreamFailure,
  unansweredFailure,
} from './upstream-failure.js';

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

export interface Forwarding {
  http: McpHttp;
  exchange: McpExchange;
  /** Where upstream failures are logged. */
  log: Logger;
  id: JsonRpcId;
  filter: ListFilter | undefined;
  /** What buffered answers (lists being filtered) may hold at once, all proxies. */
  answerBudget: ByteBudget;
  /** Writes the audit line and metrics once the exchange is over. */
  finish(exchange: McpExchange): void;
}

/**
 * The upstream did not answer: 502 (504 for a timeout) with a JSON-RPC error carrying the
 * request's id, and the failure in the audit line.
 */
function answerUnanswered(f: Forwarding, error: unknown): void {
  const { exchange } = f;
  const failure = unansweredFailure(error);
  const { status, reason, message } = UNANSWERED[failure];
  exchange.decision = 'upstream_error';
  exchange.reason = reason;
  exchange.upstreamFailure = failure;
  f.log.warn(
    { reqId: f.http.id, proxy: exchange.runtime.id, failure, err: (error as Error).message },
    'upstream request failed',
  );
  f.http.sendJson(status, jsonRpcError(f.id, -32000, message));
}

/** A 503 the gateway answers itself, in JSON-RPC shape, to be asked again after `retryAfter`. */
function answerUnavailable(
  f: Forwarding,
  failure: UpstreamFailure,
  reason: string,
  message: string,
  retryAfter: string,
): void {
  const { exchange } = f;
  exchange.decision = 'unavailable';
  exchange.reason = reason;
  exchange.upstreamFailure = failure;
  f.http.sendJson(503, jsonRpcError(f.id, -32000, message), { 'retry-after': retryAfter });
}

/**
 * The request the gateway sends upstream for this exchange, which passed the proxy's policies
 * (the only way here): the upstream credential goes with nothing else. A body goes as the
 * gateway read it, UTF-8 JSON (`contentRefusal`, `bodyTextError`), and says so.
 */
function upstreamRequest(f: Forwarding): Dispatcher.DispatchOptions {
  const { runtime } = f.exchange;
  const body = f.http.body && f.http.body.length > 0 ? f.http.body : null;
  return {
    path: runtime.upstreamPath,
    method: f.http.method as Dispatcher.HttpMethod,
    headers: upstreamHeaders(f.http.headers, {
      httpVersion: f.http.request.httpVersion,
      stripAuthorization: runtime.authenticator ? !runtime.authenticator.forwardToken : false,
      identityEncoding: f.filter !== undefined,
      credential: runtime.upstreamAuth,
      contentType: body ? FORWARDED_CONTENT_TYPE : undefined,
    }),
    body,
  };
}

/**
 * Sends the request to the proxy's upstream and streams the answer back: bytes go out as they
 * arrive with the upstream's own headers, never re-framed, except list results a policy
 * filters. Every stream and socket error ends this exchange only. A request finding every
 * connection of its proxy in use waits in the proxy's bounded queue (`UpstreamConnections`).
 */
export function forwardToUpstream(f: Forwarding): Promise<void> | undefined {
  const { upstream } = f.exchange.runtime;
  if (upstream.acquire()) return send(f, upstream);
  return waitForConnection(f, upstream);
}

/** Sends the request on the connection it holds, given back when the exchange is over. */
function send(f: Forwarding, upstream: UpstreamConnections): Promise<void> | undefined {
  if (f.filter !== undefined) return forwardFiltered(f, f.filter);
  let request: Dispatcher.DispatchOptions;
  try {
    request = upstreamRequest(f);
  } catch (error) {
    // A connection kept by a request that never went would be lost to the proxy for good.
    upstream.release();
    throw error;
  }
  upstream.pool.dispatch(request, new PassThroughHandler(f));
  return undefined;
}

const UPSTREAM_BUSY = 'Upstream MCP server busy; retry later';

/**
 * Every connection of the proxy is in use: the request waits for one in the proxy's queue, and
 * is answered 503 with `Retry-After` (never reaching the upstream) when the queue is full or no
 * connection frees in time. A client that goes away leaves the queue.
 */
function waitForConnection(
  f: Forwarding,
  upstream: UpstreamConnections,
): Promise<void> | undefined {
  const { exchange } = f;
  const raw = f.http.response;
  const busy = (failure: 'queue_full' | 'queue_timeout', reason: string) => {
    answerUnavailable(f, failure, reason, UPSTREAM_BUSY, upstream.retryAfterSeconds);
    f.finish(exchange);
  };
  if (raw.destroyed) {
    exchange.upstreamFailure = 'client_closed';
    f.finish(exchange);
    return undefined;
  }
  let withdraw: (() => void) | undefined;
  return new Promise<void>((resolve, reject) => {
    const onClientGone = () => {
      withdraw?.();
      exchange.upstreamFailure = 'client_closed';
      f.finish(exchange);
      resolve();
    };
    withdraw = upstream.enqueue({
      start() {
        raw.off('close', onClientGone);
        try {
          resolve(send(f, upstream));
        } catch (error) {
          reject(error);
        }
      },
      expire() {
        raw.off('close', onClientGone);
        busy('queue_timeout', 'no upstream connection within limits.upstream_queue_timeout');
        resolve();
      },
    });
    if (withdraw === undefined) {
      busy('queue_full', 'upstream queue full');
      resolve();
      return;
    }
    raw.once('close', onClientGone);
  });
}

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
    if (!this.f.http.response.writableFinished) this.controller?.abort(clientGone());
  };

  private readonly onDrain = () => this.controller?.resume();

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.f.http.response.destroyed) controller.abort(clientGone());
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
    if (raw.destroyed) {
      f.exchange.upstreamFailure = 'client_closed';
    } else if (raw.headersSent) {
      // The answer was cut short: the audit line has its status and why it ended.
      f.exchange.upstreamFailure = failureOf(error) ?? 'connection_lost';
      f.log.debug(
        { reqId: f.http.id, proxy: f.exchange.runtime.id, err: error.message },
        'stream ended early',
      );
      raw.destroy();
    } else {
      answerUnanswered(f, error);
    }
    this.settle();
  }

  private settle(): void {
    if (this.settled) return;
    this.settled = true;
    this.f.http.response.off('close', this.onClientClose);
    this.f.http.response.off('drain', this.onDrain);
    this.f.exchange.runtime.upstream.release();
    this.f.finish(this.f.exchange);
  }
}

/**
 * The `filterLists` path: a list result is read, filtered and written back. The bytes it holds
 * count against the buffered-answer budget until the client has the answer (or is gone).
 */
async function forwardFiltered(f: Forwarding, filter: ListFilter): Promise<void> {
  const raw = f.http.response;
  // A client that goes away mid-request cancels the upstream request too.
  const controller = new AbortController();
  const onClientGone = () => {
    if (!raw.writableFinished) controller.abort(clientGone());
  };
  raw.once('close', onClientGone);
  const held = new Reservation(f.answerBudget);
  try {
    await filterAnswer(f, filter, controller.signal, held);
  } finally {
    raw.off('close', onClientGone);
    if (raw.destroyed || raw.writableFinished) held.release();
    else raw.once('close', () => held.release());
    f.exchange.runtime.upstream.release();
    f.finish(f.exchange);
  }
}

/** The length an identity-coded answer declares, or 0 when it declares none. */
function declaredLength(headers: Dispatcher.ResponseData['headers']): number {
  const length = Number(headers['content-length']);
  return Number.isSafeInteger(length) && length > 0 ? length : 0;
}

const BUFFERED_ANSWERS_FULL =
  'The gateway is filtering too many list results at once; retry shortly';

async function filterAnswer(
  f: Forwarding,
  filter: ListFilter,
  signal: AbortSignal,
  held: Reservation,
): Promise<void> {
  const { http, exchange } = f;
  const raw = http.response;
  let upstream: Dispatcher.ResponseData;
  try {
    upstream = await exchange.runtime.upstream.pool.request({ ...upstreamRequest(f), signal });
  } catch (error) {
    if (raw.destroyed) exchange.upstreamFailure = 'client_closed';
    else answerUnanswered(f, error);
    return;
  }
  exchange.upstreamStatus = upstream.statusCode;
  const contentType = String(upstream.headers['content-type'] ?? '').toLowerCase();
  const isJson = contentType.startsWith('application/json');
  const isSse = isEventStream(contentType);
  const filtering = isJson || isSse;
  let decoder: ReturnType<typeof decoderFor>;
  if (filtering) {
    const encoding = contentEncoding(upstream.headers);
    decoder = decoderFor(encoding);
    if (!decoder && encoding !== 'identity') {
      // A list the gateway cannot read must not reach the caller unfiltered.
      discard(upstream.body);
      exchange.decision = 'upstream_error';
      exchange.reason = `list in unsupported content coding ${encoding}`;
      exchange.upstreamFailure = 'unfilterable';
      return http.sendJson(
        502,
        jsonRpcError(f.id, -32000, 'Upstream sent a list the gateway cannot filter'),
      );
    }
  }
  try {
    if (filtering && isJson) {
      // A declared length is held before a byte is read: a list that cannot fit is refused
      // without reading it.
      if (!decoder) holdListBytes(held, declaredLength(upstream.headers));
      let decoded: Buffer = Buffer.alloc(0);
      const sink = async (source: AsyncIterable<Buffer>) => {
        decoded = await readList(source, held);
      };
      if (decoder) await pipeline(upstream.body, decoder, sink);
      else await pipeline(upstream.body, sink);
      const filtered = filterJsonBody(decoded, filter.key, filter.keep);
      const headers = downstreamHeaders(upstream.headers, true, http.ownHeaders);
      headers.push('content-length', String(filtered.length));
      http.writeHead(upstream.statusCode, headers);
      raw.end(filtered);
      // The working copies are garbage now; the answer stays held until the client has it.
      held.resize(filtered.length);
    } else if (filtering) {
      http.writeHead(
        upstream.statusCode,
        downstreamHeaders(upstream.headers, true, http.ownHeaders),
      );
      raw.flushHeaders();
      const sse = new SseListFilter(filter.key, filter.keep, held);
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
      { reqId: http.id, proxy: exchange.runtime.id, err: (error as Error).message },
      'stream ended early',
    );
    decoder?.destroy();
    discard(upstream.body);
    const failure = failureOf(error) ?? (filtering ? 'unfilterable' : 'connection_lost');
    if (raw.headersSent) {
      exchange.upstreamFailure = failure;
      raw.destroy();
    } else if (raw.destroyed) {
      exchange.upstreamFailure = 'client_closed';
    } else if (failure === 'answer_budget') {
      const reason = 'buffered answers at limits.max_buffered_answer_bytes';
      answerUnavailable(f, failure, reason, BUFFERED_ANSWERS_FULL, '1');
    } else {
      // Only a list being read for filtering fails before its headers went out.
      exchange.decision = 'upstream_error';
      exchange.reason = error instanceof ExchangeFailure ? error.message : 'unreadable list result';
      exchange.upstreamFailure = failure;
      http.sendJson(502, jsonRpcError(f.id, -32000, 'Upstream list could not be filtered'));
    }
  }
}
