import { isUtf8 } from 'node:buffer';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';

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
