import type { IncomingHttpHeaders } from 'node:http';
import { performance } from 'node:perf_hooks';
import { PassThrough, pipeline, type Writable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import {
  endClientSpan,
  type JsonRpcId,
  jsonRpcError,
  type Logger,
  type Span,
} from '@mcp-identity/common';
import { type Dispatcher, Pool } from 'undici';
import {
  filterJsonBody,
  holdListBytes,
  type ListFilter,
  readList,
  SseListFilter,
} from './list-filter.js';
import type { McpExchange } from './pipeline.js';
import {
  type ByteBudget,
  FORWARDED_CONTENT_TYPE,
  type HeaderList,
  type McpHttp,
  Reservation,
} from './request.js';
import { clientSpan, withTraceMeta } from './tracing.js';
import {
  clientGone,
  ExchangeFailure,
  failureOf,
  UNANSWERED,
  type UpstreamFailure,
  unansweredFailure,
} from './upstream-failure.js';

/*
 * Forwarding an allowed request to its proxy's upstream: the proxy's bounded connections and
 * queue, the headers each way (hop-by-hop fields, the upstream credential, `Via`), and the
 * answer streamed back (or, for a list a policy filters, read, filtered and written back).
 */

/** `[limits]` bounds of each proxy's upstream connections and of the queue behind them. */
export interface UpstreamLimits {
  /** Connections a proxy opens to its upstream at most: requests it has in flight at once. */
  connections: number;
  /** Requests that may wait for a connection; one more is refused at once. */
  queueLength: number;
  /** How long a request may wait for a connection before it is refused. */
  queueTimeoutMs: number;
  /** Upstream silence (headers, or between chunks) before giving up. */
  idleTimeoutMs: number;
}

/** A request waiting for a connection. */
export interface Waiting {
  /** A connection is the request's now (`release` it when done): send it. */
  start(): void;
  /** No connection freed in time: answer without the upstream. */
  expire(): void;
}

interface Waiter {
  readonly request: Waiting;
  readonly deadline: number;
}

/**
 * One proxy's connections to its upstream: an undici pool of its own (so the proxies of one
 * upstream never wait for each other's connections) behind a bounded queue. undici's own queue
 * has no bound: a request would wait as long as the slowest answers ahead of it (28 s behind
 * 30 s calls, issue 37). Here at most `connections` requests are in flight; up to `queueLength`
 * more wait in arrival order, each at most `queueTimeoutMs`; past either bound a request is
 * refused without reaching the upstream. All waiters have the same timeout, so their deadlines
 * come in arrival order and one timer, set for the oldest, serves the whole queue.
 */
export class UpstreamConnections {
  readonly pool: Pool;
  /** Seconds a refused client is told to wait (`Retry-After`, RFC 9110 §10.2.3). */
  readonly retryAfterSeconds: string;
  private busy = 0;
  /** In arrival order (a Set iterates in insertion order and deletes in O(1)). */
  private readonly waiting = new Set<Waiter>();
  private timer: NodeJS.Timeout | undefined = undefined;
  private drained: (() => void) | undefined = undefined;

  constructor(
    origin: string,
    private readonly limits: UpstreamLimits,
  ) {
    this.pool = new Pool(origin, {
      connections: limits.connections,
      keepAliveTimeout: 30_000,
      headersTimeout: limits.idleTimeoutMs,
      bodyTimeout: limits.idleTimeoutMs,
    });
    // A refusal means every connection stayed busy for as long as a request may wait: asking
    // back sooner would most likely meet the same queue.
    this.retryAfterSeconds = String(Math.max(1, Math.ceil(limits.queueTimeoutMs / 1000)));
  }

  /** Requests holding a connection now. */
  get inFlight(): number {
    return this.busy;
  }

  /** Requests waiting for a connection now. */
  get queued(): number {
    return this.waiting.size;
  }

  /** Takes a connection for a request sent now; false when every one is in use. */
  acquire(): boolean {
    if (this.busy >= this.limits.connections) return false;
    this.busy += 1;
    return true;
  }

  /**
   * Queues a request `acquire` refused. Returns the function that withdraws it (its client went
   * away), or undefined when the queue is full (the request is not queued).
   */
  enqueue(request: Waiting): (() => void) | undefined {
    if (this.waiting.size >= this.limits.queueLength || this.drained) return undefined;
    const waiter: Waiter = { request, deadline: performance.now() + this.limits.queueTimeoutMs };
    this.waiting.add(waiter);
    this.timer ??= setTimeout(this.expireDue, this.limits.queueTimeoutMs);
    return () => {
      this.waiting.delete(waiter);
      this.checkDrained();
    };
  }

  /** A request that held a connection is over: the connection goes to the oldest waiter. */
  release(): void {
    // The usual case first: no waiter, and no iterator made for an empty queue.
    const oldest = this.waiting.size === 0 ? undefined : this.waiting.values().next().value;
    if (oldest === undefined) {
      this.busy -= 1;
      return;
    }
    this.waiting.delete(oldest);
    this.checkDrained();
    oldest.request.start();
  }

  private readonly expireDue = () => {
    this.timer = undefined;
    const now = performance.now();
    for (const waiter of this.waiting) {
      if (waiter.deadline > now) {
        this.timer = setTimeout(this.expireDue, waiter.deadline - now);
        return;
      }
      this.waiting.delete(waiter);
      waiter.request.expire();
    }
    this.checkDrained();
  };

  /**
   * Stops taking requests (the proxy was changed or removed): those already waiting are still
   * sent, then the pool closes once its requests in flight are over.
   */
  close(): Promise<void> {
    const drained = new Promise<void>((resolve) => {
      this.drained = resolve;
    });
    this.checkDrained();
    return drained.then(() => this.pool.close());
  }

  /** Drops the waiting requests (their clients are gone: the server is shutting down). */
  destroy(): Promise<void> {
    clearTimeout(this.timer);
    this.waiting.clear();
    return this.pool.destroy();
  }

  private checkDrained(): void {
    if (this.drained === undefined || this.waiting.size > 0) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.drained();
  }
}

/** Hop-by-hop headers (RFC 9110 §7.6.1) and those the client connection owns. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
  'expect',
]);

/**
 * The header names a message's `Connection` field nominates as hop-by-hop, lower-cased: an
 * intermediary must remove them before forwarding (RFC 9110 §7.6.1). `undefined` when it names
 * none beyond the fixed list: no `Connection` field at all costs one property read, and the
 * usual `keep-alive` or `close` returns before any parsing, so neither allocates.
 */
function nominatedNames(connection: string | string[] | undefined): Set<string> | undefined {
  if (connection === undefined || connection === 'keep-alive' || connection === 'close') {
    return undefined;
  }
  // Node joins repeated request fields with ", "; undici may hand repeated ones over as a list.
  if (typeof connection === 'string') return addOptions(undefined, connection);
  let names: Set<string> | undefined;
  for (const field of connection) names = addOptions(names, field);
  return names;
}

/** Adds the connection options of one `Connection` field value (`#token`, RFC 9110 §7.6.1). */
function addOptions(names: Set<string> | undefined, field: string): Set<string> | undefined {
  for (const option of field.split(',')) {
    const name = option.trim().toLowerCase();
    // The fixed list is dropped anyway (and `content-length` keeps its own rule downstream:
    // a nomination must not break the response's framing); `close` names no field.
    if (name === '' || name === 'close' || HOP_BY_HOP.has(name)) continue;
    names ??= new Set();
    names.add(name);
  }
  return names;
}

/**
 * The name the gateway gives itself in the `Via` members it adds (RFC 9110 §7.6.3): a pseudonym
 * rather than its host and port, which the upstream has no need to learn.
 */
const VIA_PSEUDONYM = 'mcp-gateway';
const VIA_HTTP_1_1 = `1.1 ${VIA_PSEUDONYM}`;

/** This gateway's `Via` member for a request received over HTTP/`httpVersion`. */
function viaMember(httpVersion: string): string {
  return httpVersion === '1.1' ? VIA_HTTP_1_1 : `${httpVersion} ${VIA_PSEUDONYM}`;
}

interface UpstreamHeaderOptions {
  /** The version of HTTP the client's request came in (`IncomingMessage.httpVersion`). */
  httpVersion: string;
  stripAuthorization: boolean;
  /** The body will be rewritten: ask for it uncompressed (RFC 9110 §12.5.3). */
  identityEncoding: boolean;
  /** `upstream.auth`: set by the gateway, never taken from the client. */
  credential: { header: string; value: string } | undefined;
  /** `upstream.tokenExchange`: the exchanged token, sent as the request's `Authorization`. */
  bearer: string | undefined;
  /**
   * The media type the gateway read the forwarded body as, when there is one: set by the
   * gateway, never taken from the client (whose charset or content coding it did not apply).
   */
  contentType: string | undefined;
  /** While tracing: the upstream request's `traceparent` (and `tracestate`), the client's replaced. */
  trace: Readonly<Record<string, string>> | undefined;
}

/** Trace context fields, which the gateway's own replace while it traces. */
function isTraceContext(name: string): boolean {
  return name === 'traceparent' || name === 'tracestate';
}

/** Fields that say how to read the body: the gateway writes its own (`contentType`). */
function describesContent(name: string): boolean {
  return name === 'content-type' || name === 'content-encoding';
}

/**
 * Request headers for the upstream, minus hop-by-hop ones (the fixed list and those the
 * client's `Connection` field nominates), the client's content description and, when asked,
 * the token, plus the body's `Content-Type` as the gateway read it and the gateway's `Via`
 * member after any the request already carries (an HTTP-to-HTTP gateway must send one in every
 * request it forwards, RFC 9110 §7.6.3). What the gateway sets itself is added after the
 * filtering, so no nomination by the client can strip it.
 */
function upstreamHeaders(headers: IncomingHttpHeaders, options: UpstreamHeaderOptions): string[] {
  const out: string[] = [];
  const credential = options.credential?.header;
  const nominated = nominatedNames(headers.connection);
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || HOP_BY_HOP.has(name) || name === credential) continue;
    if (nominated?.has(name) || name === 'via' || describesContent(name)) continue;
    if (options.stripAuthorization && name === 'authorization') continue;
    if (options.identityEncoding && name === 'accept-encoding') continue;
    if (options.trace && isTraceContext(name)) continue;
    if (typeof value === 'string') out.push(name, value);
    else for (const item of value) out.push(name, item);
  }
  // Node joins a request's repeated Via lines with ", ": one list, in the order received.
  const received = nominated?.has('via') ? undefined : headers.via;
  const member = viaMember(options.httpVersion);
  out.push('via', received ? `${received}, ${member}` : member);
  if (options.identityEncoding) out.push('accept-encoding', 'identity');
  if (options.contentType !== undefined) out.push('content-type', options.contentType);
  if (options.credential) out.push(options.credential.header, options.credential.value);
  if (options.bearer !== undefined) out.push('authorization', `Bearer ${options.bearer}`);
  if (options.trace)
    for (const name in options.trace) out.push(name, options.trace[name] as string);
  return out;
}

/** The response's content coding, lower-cased; `identity` when there is none. */
function contentEncoding(headers: Dispatcher.ResponseData['headers']): string {
  const value = headers['content-encoding'];
  if (value === undefined) return 'identity';
  return (Array.isArray(value) ? value.join(',') : value).trim().toLowerCase() || 'identity';
}

/**
 * Upstream response headers for the client, minus hop-by-hop ones (the fixed list, except the
 * upstream's framing `content-length`, and those its `Connection` field nominates); `rewritten`
 * when the gateway changes the body (its length and, once decoded, its content coding no longer
 * apply). Names in `replaced` are left out: the gateway sets those itself.
 */
function downstreamHeaders(
  headers: Dispatcher.ResponseData['headers'],
  rewritten: boolean,
  replaced: Readonly<Record<string, string>> | undefined,
): HeaderList {
  const out: HeaderList = [];
  const nominated = nominatedNames(headers.connection);
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || (HOP_BY_HOP.has(name) && name !== 'content-length')) continue;
    if (nominated?.has(name)) continue;
    if (rewritten && (name === 'content-length' || name === 'content-encoding')) continue;
    if (replaced !== undefined && Object.hasOwn(replaced, name)) continue;
    out.push(name, value);
  }
  return out;
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
  /** The token to send in place of the caller's (`upstream.tokenExchange`), if any. */
  bearer: string | undefined;
  /** While tracing: the upstream request's CLIENT span and the headers that carry it. */
  trace: { span: Span; headers: Record<string, string> } | undefined;
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
 * (the only way here): the upstream credential (and an exchanged token) goes with nothing else. A body goes as the
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
      // An exchanged token replaces the caller's: theirs never goes upstream with it.
      stripAuthorization:
        f.bearer !== undefined ||
        (runtime.authenticator ? !runtime.authenticator.forwardToken : false),
      identityEncoding: f.filter !== undefined,
      credential: runtime.upstreamAuth,
      bearer: f.bearer,
      contentType: body ? FORWARDED_CONTENT_TYPE : undefined,
      trace: f.trace?.headers,
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
function send(f: Forwarding, upstream: UpstreamConnections): undefined {
  let request: Dispatcher.DispatchOptions;
  try {
    if (f.exchange.traced) traceUpstream(f);
    request = upstreamRequest(f);
  } catch (error) {
    // A connection kept by a request that never went would be lost to the proxy for good.
    upstream.release();
    throw error;
  }
  upstream.pool.dispatch(request, new ForwardingHandler(f));
  return undefined;
}

/**
 * Starts the upstream request's CLIENT span: its context goes in the request's headers and,
 * when the client put its own in the call's `params._meta`, there in its place (the upstream
 * takes that one as its parent, the OpenTelemetry MCP conventions).
 */
function traceUpstream(f: Forwarding): void {
  const { exchange, http } = f;
  const { runtime } = exchange;
  f.trace = clientSpan(exchange, http.method, runtime.upstreamUrl);
  if (http.body && exchange.call)
    http.body = withTraceMeta(http.body, exchange.call, f.trace.headers);
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

/** The length an identity-coded answer declares, or 0 when it declares none. */
function declaredLength(headers: IncomingHttpHeaders): number {
  const length = Number(headers['content-length']);
  return Number.isSafeInteger(length) && length > 0 ? length : 0;
}

/** Whether a Content-Type names JSON, in any case (RFC 9110 §8.3.1). */
function isJson(contentType: string): boolean {
  return contentType.toLowerCase().startsWith('application/json');
}

const BUFFERED_ANSWERS_FULL =
  'The gateway is filtering too many list results at once; retry shortly';

/**
 * The forwarding engine, on undici's dispatch API: the upstream's answer goes to the client as
 * it arrives, with backpressure through the dispatch controller, so no body stream, pipeline or
 * AbortController is made for an answer passed through. A JSON body's last chunk is held back
 * and written with the end of the response, so a small answer leaves in one socket write with
 * its headers; an SSE stream's head is flushed at once (it may stay silent for long).
 *
 * A list result a policy filters (`filterLists`) goes through a filtering stage instead: its
 * bytes (decoded when the upstream compressed them) are read whole and filtered (JSON), or
 * filtered event by event (SSE), every byte held counted against the buffered-answer budget
 * until the client has the answer. Upstream failure, the client going away and the end of the
 * exchange are handled here once, whichever way the answer went.
 */
class ForwardingHandler implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined = undefined;
  /** A passed-through JSON body's last chunk, held back to leave with the end. */
  private last: Buffer | undefined = undefined;
  private streaming = false;
  /** Where a filtered answer's bytes go: the head of its filtering stage. */
  private stage: Writable | undefined = undefined;
  /** The buffered-answer bytes a filtered answer holds. */
  private held: Reservation | undefined = undefined;
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
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    const { http, exchange, filter } = this.f;
    exchange.upstreamStatus = statusCode;
    const contentType = headers['content-type'];
    this.streaming = typeof contentType === 'string' && isEventStream(contentType);
    if (filter && (this.streaming || (typeof contentType === 'string' && isJson(contentType)))) {
      this.filterStage(controller, filter, statusCode, headers);
      return;
    }
    http.writeHead(statusCode, downstreamHeaders(headers, false, http.ownHeaders));
    if (this.streaming) http.response.flushHeaders();
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) return;
    const { stage } = this;
    if (stage) {
      if (!stage.write(chunk)) {
        controller.pause();
        stage.once('drain', this.onDrain);
      }
      return;
    }
    const raw = this.f.http.response;
    let out = chunk;
    if (!this.streaming) {
      out = this.last as Buffer;
      this.last = chunk;
      if (out === undefined) return;
    }
    if (!raw.write(out)) {
      controller.pause();
      raw.once('drain', this.onDrain);
    }
  }

  onResponseEnd(): void {
    if (this.settled) return;
    // A filtering stage settles the exchange once it has written the answer.
    if (this.stage) return void this.stage.end();
    this.f.http.response.end(this.last);
    this.last = undefined;
    this.settle();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.fail(error);
  }

  /**
   * Sets up the filtering stage of a list result: a content coding the gateway cannot read is
   * answered 502 at once (a list must not reach the caller unfiltered), a declared length that
   * cannot be held is refused before a byte is read.
   */
  private filterStage(
    controller: Dispatcher.DispatchController,
    filter: ListFilter,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    const { http, exchange } = this.f;
    const encoding = contentEncoding(headers);
    const decoder = decoderFor(encoding);
    if (!decoder && encoding !== 'identity') {
      exchange.decision = 'upstream_error';
      exchange.reason = `list in unsupported content coding ${encoding}`;
      exchange.upstreamFailure = 'unfilterable';
      http.sendJson(
        502,
        jsonRpcError(this.f.id, -32000, 'Upstream sent a list the gateway cannot filter'),
      );
      this.settle();
      controller.abort(new ExchangeFailure('unfilterable', exchange.reason));
      return;
    }
    const held = new Reservation(this.f.answerBudget);
    this.held = held;
    const done = (error: Error | null | undefined) => {
      if (!error) return this.settle();
      this.fail(error);
      controller.abort(error);
    };
    if (this.streaming) {
      http.writeHead(statusCode, downstreamHeaders(headers, true, http.ownHeaders));
      http.response.flushHeaders();
      const sse = new SseListFilter(filter, held);
      this.stage = decoder ?? sse;
      if (decoder) pipeline(decoder, sse, http.response, done);
      else pipeline(sse, http.response, done);
      return;
    }
    const head = new PassThrough();
    this.stage = head;
    let decoded: Buffer = Buffer.alloc(0);
    const collect = async (source: AsyncIterable<Buffer>) => {
      decoded = await readList(source, held);
    };
    const written = (error: Error | null | undefined) => {
      if (error) return done(error);
      const filtered = filterJsonBody(decoded, filter);
      const out = downstreamHeaders(headers, true, http.ownHeaders);
      out.push('content-length', String(filtered.length));
      http.writeHead(statusCode, out);
      http.response.end(filtered);
      // The working copies are garbage now; the answer stays held until the client has it.
      held.resize(filtered.length);
      this.settle();
    };
    if (decoder) pipeline(head, decoder, collect, written);
    else pipeline(head, collect, written);
    // A declared length is held before a byte is read: a list that cannot fit is refused
    // without reading it.
    if (decoder) return;
    try {
      holdListBytes(held, declaredLength(headers));
    } catch (error) {
      done(error as Error);
    }
  }

  /** Ends the exchange on a failure, upstream's or the filtering stage's, answered or not. */
  private fail(error: Error): void {
    if (this.settled) return;
    const { http, exchange, log } = this.f;
    const raw = http.response;
    const filtering = this.stage !== undefined;
    this.last = undefined;
    this.stage?.destroy();
    const failure = failureOf(error) ?? (filtering ? 'unfilterable' : 'connection_lost');
    // A filtered stream's own error is the truth even once the client's side is torn down.
    if (raw.destroyed && !(filtering && raw.headersSent)) {
      exchange.upstreamFailure = 'client_closed';
    } else if (raw.headersSent) {
      // The answer was cut short: the audit line has its status and why it ended.
      exchange.upstreamFailure = failure;
      log.debug(
        { reqId: http.id, proxy: exchange.runtime.id, err: error.message },
        'stream ended early',
      );
      raw.destroy();
    } else if (!filtering) {
      answerUnanswered(this.f, error);
    } else if (failure === 'answer_budget') {
      const reason = 'buffered answers at limits.max_buffered_answer_bytes';
      answerUnavailable(this.f, failure, reason, BUFFERED_ANSWERS_FULL, '1');
    } else {
      // Only a list being read for filtering fails before its headers went out.
      exchange.decision = 'upstream_error';
      exchange.reason = error instanceof ExchangeFailure ? error.message : 'unreadable list result';
      exchange.upstreamFailure = failure;
      http.sendJson(502, jsonRpcError(this.f.id, -32000, 'Upstream list could not be filtered'));
    }
    this.settle();
  }

  private settle(): void {
    if (this.settled) return;
    this.settled = true;
    const { f, held } = this;
    const raw = f.http.response;
    raw.off('close', this.onClientClose);
    raw.off('drain', this.onDrain);
    if (held) {
      if (raw.destroyed || raw.writableFinished) held.release();
      else raw.once('close', () => held.release());
    }
    f.exchange.runtime.upstream.release();
    if (f.trace) endClientSpan(f.trace.span, f.exchange.upstreamStatus, f.exchange.upstreamFailure);
    f.finish(f.exchange);
  }
}
