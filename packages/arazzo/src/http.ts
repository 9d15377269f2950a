/**
 * Outgoing HTTP for document loading, token requests and API calls: one undici Agent (a
 * keep-alive pool per origin), a per-request timeout covering headers and body, and a cap on
 * the response size.
 */
import type { IncomingHttpHeaders } from 'node:http';
import {
  activeContext,
  boundedMemo,
  endClientSpan,
  httpClientAttributes,
  type Span,
  SpanKind,
  startSpan,
  traceHeaders,
  tracingEnabled,
  urlWithoutQuery,
} from '@mcp-identity/common';
import { Agent, type Dispatcher } from 'undici';
import { type FailureKind, RunFailureError } from './failure.js';

export interface HttpSettings {
  tlsVerify: boolean;
  /** PEM certificates trusted instead of Node's bundled roots (node:tls's `ca`), e.g. a local CA. */
  ca?: string | undefined;
  timeoutMs: number;
  maxResponseBytes: number;
}

export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024;

export interface HttpRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
}

export interface HttpResponse {
  status: number;
  /** lower-cased names; repeated headers joined with ", " */
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * A transport failure: nothing usable came back. `sent` once the request went out on a
 * connection (undici starts a request only on a connected socket), so a refused or failed
 * connection is known not to have reached the server; `status` when an answer had begun.
 */
export class HttpError extends RunFailureError {
  override readonly code = 'ERR_ARAZZO_HTTP';

  constructor(
    message: string,
    kind: Extract<FailureKind, 'connection' | 'timeout' | 'bad-response' | 'workflow'>,
    readonly sent: boolean,
    readonly status?: number,
  ) {
    super(message, kind);
  }
}

/** `ARAZZO_DISABLE_TLS_VERIFY` disables verification only when it is exactly `1` after trim. */
export function tlsVerifyFromEnv(env: Record<string, string | undefined>): boolean {
  return env.ARAZZO_DISABLE_TLS_VERIFY?.trim() !== '1';
}

/** The URL without query or fragment, for messages (a query may carry an API key). */
export function describeUrl(url: string): string {
  try {
    return urlWithoutQuery(new URL(url));
  } catch {
    return url.replace(/[?#].*$/, '');
  }
}

/** The method and the described URL, the head of every message about a request. */
export function describeRequest(req: HttpRequest): string {
  return `${req.method.toUpperCase()} ${describeUrl(req.url)}`;
}

/**
 * An error answer in a few words: OAuth's `error` and `error_description` (RFC 6749 §5.2),
 * SCIM's `detail` (RFC 7644 §3.12), else the start of the text.
 */
export function describeAnswer(status: number, text: string): string {
  try {
    const body = JSON.parse(text) as Record<string, unknown>;
    if (typeof body.error === 'string') {
      const description =
        typeof body.error_description === 'string' ? `: ${body.error_description}` : '';
      return `HTTP ${status} ${body.error}${description}`;
    }
    if (typeof body.detail === 'string') return `HTTP ${status}: ${body.detail}`;
  } catch {
    // not JSON: quote the text below
  }
  const snippet = text.trim().slice(0, 200);
  return snippet ? `HTTP ${status}: ${snippet}` : `HTTP ${status}`;
}

function causeOf(error: unknown): string {
  const err = error as { code?: string; message?: string; cause?: unknown };
  const inner = err.cause as { code?: string; message?: string } | undefined;
  const code = err.code ?? inner?.code;
  const message = inner?.message ?? err.message ?? String(error);
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code && !message.includes(code)) return `${message} (${code})`;
  return message;
}

function flattenHeaders(
  raw: Record<string, string | string[] | undefined>,
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

/** Where a request goes, as undici's dispatch takes it. */
interface Target {
  origin: string;
  path: string;
}

function parseTarget(url: string): Target {
  const parsed = new URL(url);
  return { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
}

const queryFreeTarget = boundedMemo(1000, parseTarget);

/**
 * The origin and path of a URL (throws for an invalid one). Those without a query are
 * memoised: a workflow's requests go to few of them (the token endpoint, the API operations),
 * while a query varies with every call and may carry a credential.
 */
function targetOf(url: string): Target {
  return url.includes('?') ? parseTarget(url) : queryFreeTarget(url);
}

export class HttpClient {
  private readonly agent: Agent;

  constructor(readonly settings: HttpSettings) {
    this.agent = new Agent({
      keepAliveTimeout: 30_000,
      connect: {
        timeout: settings.timeoutMs,
        ...(settings.ca === undefined ? {} : { ca: settings.ca }),
        ...(settings.tlsVerify ? {} : { rejectUnauthorized: false }),
      },
    });
  }

  /**
   * On undici's dispatch API: the answer is collected straight from the connection, without
   * the body stream, async iterator and async-hooks resource `request()` makes per request.
   */
  send(req: HttpRequest): Promise<HttpResponse> {
    return tracingEnabled() ? this.tracedSend(req) : this.dispatch(req, req.headers);
  }

  /**
   * `send` in a CLIENT span, child of the active one (the MCP call's), whose `traceparent`
   * goes with the request: an API call and a token request alike. Its attributes name the URL
   * without its query, never a header or the body.
   */
  private tracedSend(req: HttpRequest): Promise<HttpResponse> {
    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      return this.dispatch(req, req.headers);
    }
    const method = req.method.toUpperCase();
    const span: Span = startSpan(method, {
      kind: SpanKind.CLIENT,
      parent: activeContext(),
      attributes: httpClientAttributes(method, url),
    });
    return this.dispatch(req, { ...req.headers, ...traceHeaders(span) }).then(
      (response) => {
        endClientSpan(span, response.status);
        return response;
      },
      (error: unknown) => {
        const failure = error instanceof HttpError ? error.kind : 'error';
        endClientSpan(span, error instanceof HttpError ? error.status : undefined, failure);
        throw error;
      },
    );
  }

  private dispatch(req: HttpRequest, headers: Record<string, string>): Promise<HttpResponse> {
    let target: Target;
    try {
      target = targetOf(req.url);
    } catch (error) {
      return Promise.reject(
        new HttpError(`${describeRequest(req)}: ${causeOf(error)}`, 'workflow', false),
      );
    }
    return new Promise((resolve, reject) => {
      this.agent.dispatch(
        {
          origin: target.origin,
          path: target.path,
          method: req.method.toUpperCase() as Dispatcher.HttpMethod,
          headers,
          body: req.body,
          headersTimeout: this.settings.timeoutMs,
          bodyTimeout: this.settings.timeoutMs,
        },
        new CollectingHandler(req, this.settings, resolve, reject),
      );
    });
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

/** Collects one answer within the size cap and the deadline. */
class CollectingHandler implements Dispatcher.DispatchHandler {
  // undici's headers and body timeouts bound each wait; the deadline bounds the whole exchange
  // (a body trickling in slowly). Cheaper per request than an AbortSignal timer.
  private readonly deadline: number;
  private sent = false;
  private status: number | undefined;
  private headers: Record<string, string> = {};
  private readonly chunks: Buffer[] = [];
  private size = 0;

  constructor(
    private readonly req: HttpRequest,
    private readonly settings: HttpSettings,
    private readonly resolve: (response: HttpResponse) => void,
    private readonly reject: (error: HttpError) => void,
  ) {
    this.deadline = Date.now() + settings.timeoutMs;
  }

  private failed(message: string, kind: 'connection' | 'timeout' | 'bad-response'): HttpError {
    return new HttpError(`${describeRequest(this.req)}: ${message}`, kind, this.sent, this.status);
  }

  private timedOut(): HttpError {
    return this.failed(`timed out after ${this.settings.timeoutMs} ms`, 'timeout');
  }

  // undici takes a handler for its current API by this method's presence; it calls it when it
  // starts writing the request on a connected socket.
  onRequestStart(): void {
    this.sent = true;
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    // An informational answer (1xx) is followed by the real one.
    if (statusCode < 200) return;
    this.status = statusCode;
    this.headers = flattenHeaders(headers);
    const declared = Number(this.headers['content-length']);
    const limit = this.settings.maxResponseBytes;
    if (Number.isFinite(declared) && declared > limit) {
      controller.abort(
        this.failed(
          `response of ${declared} bytes exceeds the limit of ${limit} bytes`,
          'bad-response',
        ),
      );
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.size += chunk.length;
    const limit = this.settings.maxResponseBytes;
    if (this.size > limit) {
      controller.abort(this.failed(`response exceeds the limit of ${limit} bytes`, 'bad-response'));
      return;
    }
    if (Date.now() > this.deadline) {
      controller.abort(this.timedOut());
      return;
    }
    this.chunks.push(chunk);
  }

  onResponseEnd(): void {
    const { chunks } = this;
    this.resolve({
      status: this.status ?? 0,
      headers: this.headers,
      body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks),
    });
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (error instanceof HttpError) {
      this.reject(error);
      return;
    }
    const code = (error as { code?: string }).code;
    if (
      code === 'UND_ERR_HEADERS_TIMEOUT' ||
      code === 'UND_ERR_BODY_TIMEOUT' ||
      code === 'UND_ERR_CONNECT_TIMEOUT'
    ) {
      this.reject(this.timedOut());
      return;
    }
    this.reject(this.failed(causeOf(error), 'connection'));
  }
}

/**
 * The response body as JSON when its media type says so, else text. A body declared JSON that
 * does not parse cannot be used (outputs read from it would silently be null): an HttpError,
 * except for a 5xx answer, whose status already says what went wrong. A body without a media
 * type is parsed when it looks like JSON, and kept as text otherwise.
 */
export function decodeBody(req: HttpRequest, response: HttpResponse): unknown {
  if (response.body.length === 0) return null;
  const text = response.body.toString('utf8');
  const type = response.headers['content-type'] ?? '';
  const declared = /[/+]json\b/i.test(type);
  if (declared || (type === '' && /^\s*[{[]/.test(text))) {
    try {
      return JSON.parse(text);
    } catch {
      if (declared && response.status < 500) {
        throw new HttpError(
          `${describeRequest(req)}: the HTTP ${response.status} answer is not valid JSON (${type})`,
          'bad-response',
          true,
          response.status,
        );
      }
      return text;
    }
  }
  return text;
}
