import { isUtf8 } from 'node:buffer';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AppState } from '@mcp-identity/common';

/*
 * One HTTP request on a data-plane listener, as the gateway reads it: the node:http objects and
 * the two ways the gateway answers (the upstream's head, or a JSON body of its own), which
 * content it reads (UTF-8 JSON on a POST, nothing else), the body read under its size cap, and
 * the process-wide byte budgets that bound what all requests hold at once.
 */

/**
 * A header list as `name, value, name, value, …`: what undici and Node's `writeHead` read
 * fastest (no `Object.entries`, no keyed stores into a fresh object of its own shape).
 */
export type HeaderList = Array<string | string[]>;

const ANSWER_CONTENT_TYPE = 'application/json; charset=utf-8';

let lastRequestId = 0;

/**
 * One HTTP request to a proxy's `<context>/mcp`, served on the node:http objects themselves:
 * the request, its body once read, and the two ways the data plane answers (the upstream's
 * head, or a JSON body of its own).
 */
export class McpHttp {
  /** The request body once read; undefined while unread (and for every method but POST). */
  body: Buffer | undefined = undefined;
  private requestId: string | undefined = undefined;
  private own: Record<string, string> | undefined = undefined;

  constructor(
    readonly request: IncomingMessage,
    readonly response: ServerResponse,
    private readonly app: AppState,
  ) {}

  /**
   * An id for this request's log lines (the `reqId` of Fastify's lines), made the first time a
   * line needs it: most requests log nothing but their audit line.
   */
  get id(): string {
    this.requestId ??= `mcp-${(++lastRequestId).toString(36)}`;
    return this.requestId;
  }

  get method(): string {
    return this.request.method as string;
  }

  get headers(): IncomingHttpHeaders {
    return this.request.headers;
  }

  /** Whether an answer has begun (headers written), by the gateway or from the upstream. */
  get answered(): boolean {
    return this.response.headersSent;
  }

  /** Whether the client is still sending a body the gateway has not read (and will not). */
  get hasUnreadBody(): boolean {
    const { headers } = this.request;
    // Node refuses a request with both a Content-Length and a Transfer-Encoding (RFC 9112
    // §6.3), so one with a Content-Length of 0 has no body.
    return this.body === undefined && announcesBody(headers) && headers['content-length'] !== '0';
  }

  /**
   * Headers the gateway adds to whichever answer this request gets (CORS, `connection`); they
   * replace the upstream's of the same name.
   */
  get ownHeaders(): Readonly<Record<string, string>> | undefined {
    return this.own;
  }

  /**
   * Adds one of the gateway's own headers. Kept here rather than set on the response: a
   * response with headers already set makes Node merge and re-validate every header of the
   * head one by one.
   */
  setHeader(name: string, value: string): void {
    this.own ??= {};
    this.own[name] = value;
  }

  /** Asks the client to close the connection after this answer. */
  closeConnection(): void {
    this.setHeader('connection', 'close');
  }

  /** Starts an answer with these headers (none named in `ownHeaders`) and the gateway's own. */
  writeHead(status: number, headers: HeaderList): void {
    const { own } = this;
    if (own) for (const name in own) headers.push(name, own[name] as string);
    // While the server shuts down, keep-alive connections must not outlive this answer.
    if (this.app.closing && own?.connection === undefined) headers.push('connection', 'close');
    this.response.writeHead(status, headers);
  }

  /**
   * A whole JSON answer from the gateway itself. A body the client is still sending is not
   * worth reading: the connection closes after the answer.
   */
  sendJson(status: number, body: unknown, headers?: Readonly<Record<string, string>>): void {
    if (this.hasUnreadBody) this.closeConnection();
    const payload = JSON.stringify(body);
    const head: HeaderList = [];
    if (headers) for (const name in headers) head.push(name, headers[name] as string);
    head.push(
      'content-type',
      ANSWER_CONTENT_TYPE,
      'content-length',
      String(Buffer.byteLength(payload)),
    );
    this.writeHead(status, head);
    this.response.end(payload);
  }

  /** An answer without a body (an OPTIONS request's 204). */
  sendEmpty(status: number): void {
    // A body nobody reads is not worth reading: the connection closes after the answer.
    if (this.hasUnreadBody) this.closeConnection();
    this.writeHead(status, []);
    this.response.end();
  }
}

/** A body that cannot be read: the status and message of the error answer. */
export interface BodyError {
  status: 400 | 413;
  message: string;
}

const BODY_TOO_LARGE: BodyError = { status: 413, message: 'Request body is too large' };

/**
 * A request whose content the gateway will not read, refused from its headers: it would mean
 * one thing to the gateway's policies and possibly another to the upstream.
 */
export interface ContentRefusal {
  status: 400 | 415;
  /** The JSON-RPC error's message. */
  message: string;
  /** Why, for the audit line. */
  reason: string;
  headers?: Readonly<Record<string, string>>;
}

/** The Content-Type of every body the gateway forwards: what it read the body as. */
export const FORWARDED_CONTENT_TYPE = 'application/json';

/**
 * `application/json` with no parameter but `charset=utf-8`, in any case (RFC 9110 §8.3.1,
 * parameters as §5.6.6 writes them). JSON exchanged between systems is UTF-8 (RFC 8259 §8.1)
 * and its media type defines no parameter (§11), yet upstreams decode with a `charset` they are
 * given (body-parser, behind the MCP SDK's `createMcpExpressApp`, reads UTF-7): any other
 * charset, or a parameter the gateway does not know, is refused rather than guessed at. Each
 * `;` starts one optional parameter and whitespace belongs to one place, so the match is
 * linear.
 */
const JSON_CONTENT_TYPE =
  /^application\/json(?:[ \t]*;(?:[ \t]*charset=(?:utf-8|"utf-8"))?)*[ \t]*$/i;

const NOT_JSON: ContentRefusal = {
  status: 415,
  message: 'Unsupported Media Type: Content-Type must be application/json (charset utf-8)',
  reason: 'unsupported media type',
};

/** RFC 9110 §15.5.16: a content coding the server does not accept names the ones it does. */
const ENCODED: ContentRefusal = {
  status: 415,
  message: 'Unsupported Media Type: Content-Encoding must be identity',
  reason: 'unsupported content coding',
  headers: { 'accept-encoding': 'identity' },
};

/**
 * RFC 9112 §6.1: Node's parser takes any transfer coding before `chunked` and hands over the
 * bytes still coded; the gateway reads only unchunked bytes as they are.
 */
const TRANSFER_CODED: ContentRefusal = {
  status: 400,
  message: 'Bad Request: Transfer-Encoding other than chunked is not supported',
  reason: 'unsupported transfer coding',
};

let lastJsonContentType = FORWARDED_CONTENT_TYPE;

/** Whether a Content-Type is one `JSON_CONTENT_TYPE` accepts. */
function isJsonContentType(contentType: string): boolean {
  if (contentType === lastJsonContentType) return true;
  const valid = JSON_CONTENT_TYPE.test(contentType);
  // Clients send the same Content-Type on every request: remember the last good one.
  if (valid) lastJsonContentType = contentType;
  return valid;
}

/** Whether a content coding field names none (`identity` is its reserved name, RFC 9110 §8.4.1). */
function isIdentity(coding: string | undefined): boolean {
  return coding === undefined || coding === '' || coding.trim().toLowerCase() === 'identity';
}

/**
 * Why the content of a request is refused before a byte of it is read, if it is: a POST's
 * body must be UTF-8 JSON with no content coding, the only body the gateway's policies read
 * as the upstream will; a body on any other method (GET, HEAD, DELETE: none has a defined
 * meaning, RFC 9110 §9.3) is neither parsed nor governed, so it is refused rather than
 * forwarded. `hasBody`: whether the request announces a body not yet read.
 */
export function contentRefusal(
  method: string,
  headers: IncomingHttpHeaders,
  hasBody: boolean,
): ContentRefusal | undefined {
  if (method !== 'POST') {
    if (!hasBody) return undefined;
    return {
      status: 415,
      message: `Unsupported Media Type: a ${method} request carries no content`,
      reason: 'content on a method without one',
    };
  }
  const transferCoding = headers['transfer-encoding'];
  if (transferCoding !== undefined && transferCoding.toLowerCase() !== 'chunked') {
    return TRANSFER_CODED;
  }
  if (!isIdentity(headers['content-encoding'])) return ENCODED;
  const contentType = headers['content-type'];
  if (contentType === undefined) return hasBody ? NOT_JSON : undefined;
  return isJsonContentType(contentType) ? undefined : NOT_JSON;
}

/**
 * Why a body is not JSON text the gateway and the upstream read alike, if it is not: bytes
 * that are not UTF-8 (an overlong `C0 AF` is `/` to a lenient decoder, U+FFFD to the gateway)
 * or that start with a byte order mark (RFC 8259 §8.1: never sent; some parsers skip it, the
 * gateway's does not).
 */
export function bodyTextError(body: Buffer): string | undefined {
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) {
    return 'Request body starts with a byte order mark';
  }
  return isUtf8(body) ? undefined : 'Request body is not valid UTF-8';
}

/**
 * Reads a request body of at most `limit` bytes. A declared length over the limit is refused
 * before a byte is read; a body that grows past it is refused as soon as it does (the rest is
 * read and dropped: the caller closes the connection after answering).
 */
export function readBody(
  request: IncomingMessage,
  limit: number,
  done: (error: BodyError | undefined, body: Buffer | undefined) => void,
): void {
  // NaN without a Content-Length (a chunked body).
  const declared = Number(request.headers['content-length']);
  if (declared > limit) {
    done(BODY_TOO_LARGE, undefined);
    return;
  }
  const chunks: Buffer[] = [];
  let received = 0;
  // Settled once: later events (the rest of a body refused as too large, an error after the
  // end) find it so, which costs less than removing the listeners.
  let settled = false;
  // A copy: the body outlives the request's own buffers (it is forwarded upstream later).
  const complete = () => {
    settled = true;
    done(undefined, Buffer.concat(chunks, received));
  };
  request.on('data', (chunk: Buffer) => {
    if (settled) return;
    received += chunk.length;
    if (received > limit) {
      settled = true;
      chunks.length = 0;
      done(BODY_TOO_LARGE, undefined);
      return;
    }
    chunks.push(chunk);
    // The HTTP parser ends a message only once its declared length has arrived (a connection
    // closed sooner is an 'error'), so the last declared byte completes the body: no waiting
    // for 'end', which comes a tick later.
    if (received === declared) complete();
  });
  if (!(declared > 0)) {
    request.on('end', () => {
      if (!settled) complete();
    });
  }
  request.on('error', (error: Error) => {
    if (settled) return;
    settled = true;
    done({ status: 400, message: error.message }, undefined);
  });
}

/** Whether a request announces a body (RFC 9112 §6.3): a length or a transfer coding. */
function announcesBody(headers: IncomingHttpHeaders): boolean {
  return headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined;
}

/**
 * A process-wide cap on bytes held at once for one purpose, across all proxies: request bodies
 * being received (`BodyBudget`), upstream answers buffered to be filtered. Bytes are taken
 * before they are held; what would exceed the cap is refused (503) instead of growing memory.
 */
export class ByteBudget {
  private used = 0;

  constructor(readonly capBytes: number) {}

  /** Bytes held now. */
  get usedBytes(): number {
    return this.used;
  }

  /** Takes `bytes` if they fit: true; false, taking nothing, when they would exceed the cap. */
  take(bytes: number): boolean {
    if (this.used + bytes > this.capBytes) return false;
    this.used += bytes;
    return true;
  }

  give(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
  }
}

/** The bytes one exchange holds from a budget, resized as it reads; `release` gives them back. */
export class Reservation {
  private held = 0;

  constructor(private readonly budget: ByteBudget) {}

  get bytes(): number {
    return this.held;
  }

  /** Makes the reservation `bytes` in all: false, leaving it as it was, when it cannot grow. */
  resize(bytes: number): boolean {
    if (bytes > this.held && !this.budget.take(bytes - this.held)) return false;
    if (bytes < this.held) this.budget.give(this.held - bytes);
    this.held = bytes;
    return true;
  }

  release(): void {
    this.resize(0);
  }
}

/**
 * The request body budget: bytes are reserved from the declared length (or the per-request cap
 * when none is declared) before anything is read.
 */
export class BodyBudget extends ByteBudget {
  /**
   * Admits the body a request with these headers announces, if any: its bytes (the declared
   * length, capped at `maxBodyBytes`) are held until `response` closes. False, holding nothing,
   * when they would exceed the cap.
   */
  admit(headers: IncomingHttpHeaders, maxBodyBytes: number, response: ServerResponse): boolean {
    if (!announcesBody(headers)) return true;
    const declared = Number(headers['content-length']);
    const bytes = Math.min(
      Number.isFinite(declared) && declared >= 0 ? declared : maxBodyBytes,
      maxBodyBytes,
    );
    if (!this.take(bytes)) return false;
    // 'close' comes once: `on` spares the wrapper `once` would make.
    response.on('close', () => this.give(bytes));
    return true;
  }
}
