import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
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

/** Request headers for the upstream, minus hop-by-hop ones and, when asked, the token. */
export function upstreamHeaders(
  headers: IncomingHttpHeaders,
  options: { stripAuthorization: boolean; identityEncoding: boolean },
) {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    if (options.stripAuthorization && name === 'authorization') continue;
    if (options.identityEncoding && name === 'accept-encoding') continue;
    out[name] = value;
  }
  return out;
}

/** A compressed body cannot be filtered; refusing it keeps `filterLists` from failing open. */
export function isCompressed(headers: Dispatcher.ResponseData['headers']): boolean {
  const encoding = String(headers['content-encoding'] ?? 'identity').toLowerCase();
  return encoding !== 'identity';
}

/** Upstream response headers for the client; `dropLength` when the body is rewritten. */
export function downstreamHeaders(
  headers: Dispatcher.ResponseData['headers'],
  dropLength: boolean,
) {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || (HOP_BY_HOP.has(name) && name !== 'content-length')) continue;
    if (dropLength && name === 'content-length') continue;
    out[name] = value;
  }
  return out;
}
