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

export interface UpstreamHeaderOptions {
  stripAuthorization: boolean;
  /** The body will be rewritten: ask for it uncompressed (RFC 9110 §12.5.3). */
  identityEncoding: boolean;
  /** `upstream.auth`: set by the gateway, never taken from the client. */
  credential: { header: string; value: string } | undefined;
}

/**
 * A header list as `name, value, name, value, …`: what undici and Node's `writeHead` read
 * fastest (no `Object.entries`, no keyed stores into a fresh object of its own shape).
 */
export type HeaderList = Array<string | string[]>;

/** Request headers for the upstream, minus hop-by-hop ones and, when asked, the token. */
export function upstreamHeaders(
  headers: IncomingHttpHeaders,
  options: UpstreamHeaderOptions,
): string[] {
  const out: string[] = [];
  const credential = options.credential?.header;
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || HOP_BY_HOP.has(name) || name === credential) continue;
    if (options.stripAuthorization && name === 'authorization') continue;
    if (options.identityEncoding && name === 'accept-encoding') continue;
    if (typeof value === 'string') out.push(name, value);
    else for (const item of value) out.push(name, item);
  }
  if (options.identityEncoding) out.push('accept-encoding', 'identity');
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
 * Upstream response headers for the client; `rewritten` when the gateway changes the body
 * (its length and, once decoded, its content coding no longer apply). Names in `replaced` are
 * left out: the gateway sets those itself.
 */
export function downstreamHeaders(
  headers: Dispatcher.ResponseData['headers'],
  rewritten: boolean,
  replaced: Readonly<Record<string, string>> | undefined,
): HeaderList {
  const out: HeaderList = [];
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || (HOP_BY_HOP.has(name) && name !== 'content-length')) continue;
    if (rewritten && (name === 'content-length' || name === 'content-encoding')) continue;
    if (replaced !== undefined && Object.hasOwn(replaced, name)) continue;
    out.push(name, value);
  }
  return out;
}
