import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';

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

export interface UpstreamHeaderOptions {
  /** The version of HTTP the client's request came in (`IncomingMessage.httpVersion`). */
  httpVersion: string;
  stripAuthorization: boolean;
  /** The body will be rewritten: ask for it uncompressed (RFC 9110 §12.5.3). */
  identityEncoding: boolean;
  /** `upstream.auth`: set by the gateway, never taken from the client. */
  credential: { header: string; value: string } | undefined;
  /**
   * The media type the gateway read the forwarded body as, when there is one: set by the
   * gateway, never taken from the client (whose charset or content coding it did not apply).
   */
  contentType: string | undefined;
}

/** Fields that say how to read the body: the gateway writes its own (`contentType`). */
function describesContent(name: string): boolean {
  return name === 'content-type' || name === 'content-encoding';
}

/**
 * A header list as `name, value, name, value, …`: what undici and Node's `writeHead` read
 * fastest (no `Object.entries`, no keyed stores into a fresh object of its own shape).
 */
export type HeaderList = Array<string | string[]>;

/**
 * Request headers for the upstream, minus hop-by-hop ones (the fixed list and those the
 * client's `Connection` field nominates), the client's content description and, when asked,
 * the token, plus the body's `Content-Type` as the gateway read it and the gateway's `Via`
 * member after any the request already carries (an HTTP-to-HTTP gateway must send one in every
 * request it forwards, RFC 9110 §7.6.3). What the gateway sets itself is added after the
 * filtering, so no nomination by the client can strip it.
 */
export function upstreamHeaders(
  headers: IncomingHttpHeaders,
  options: UpstreamHeaderOptions,
): string[] {
  const out: string[] = [];
  const credential = options.credential?.header;
  const nominated = nominatedNames(headers.connection);
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || HOP_BY_HOP.has(name) || name === credential) continue;
    if (nominated?.has(name) || name === 'via' || describesContent(name)) continue;
    if (options.stripAuthorization && name === 'authorization') continue;
    if (options.identityEncoding && name === 'accept-encoding') continue;
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
  return out;
}

/** The response's content coding, lower-cased; `identity` when there is none. */
export function contentEncoding(headers: Dispatcher.ResponseData['headers']): string {
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
export function downstreamHeaders(
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
