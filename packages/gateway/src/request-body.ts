import type { IncomingMessage } from 'node:http';

/** A body that cannot be accepted: the status and message of the error answer. */
export interface BodyError {
  status: 400 | 413 | 415;
  message: string;
}

const BODY_TOO_LARGE: BodyError = { status: 413, message: 'Request body is too large' };
export const UNSUPPORTED_MEDIA_TYPE: BodyError = { status: 415, message: 'Unsupported Media Type' };

/** RFC 9110 §5.6.2 token characters. */
const TOKEN = /^[\w!#$%&'*+.^`|~-]+$/;

/**
 * Whether a Content-Type names a media type (RFC 9110 §8.3.1: `type "/" subtype`, both
 * tokens, then optional parameters). The parameters are not judged.
 */
export function isMediaType(contentType: string): boolean {
  if (contentType === lastMediaType) return true;
  const semicolon = contentType.indexOf(';');
  const mediaType = semicolon < 0 ? contentType : contentType.slice(0, semicolon);
  const slash = mediaType.indexOf('/');
  if (slash < 0) return false;
  const valid =
    TOKEN.test(mediaType.slice(0, slash).trimStart()) &&
    TOKEN.test(mediaType.slice(slash + 1).trimEnd());
  // Clients send the same Content-Type on every request: remember the last good one.
  if (valid) lastMediaType = contentType;
  return valid;
}

let lastMediaType = '';

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
