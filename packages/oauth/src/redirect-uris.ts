/**
 * Redirect URI policy (design §4): registration accepts https, loopback http and private-use
 * schemes (RFC 8252 §7.1); matching is exact, except that a loopback http URI matches on any
 * port (RFC 8252 §7.3); a client registered without URIs may use loopback http URIs only.
 */

export const MAX_REDIRECT_URIS = 10;
export const MAX_REDIRECT_URI_LENGTH = 2000;

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
/** Schemes a browser would execute, render or resolve locally rather than hand to an app. */
const FORBIDDEN_SCHEMES = new Set([
  'javascript:',
  'data:',
  'vbscript:',
  'file:',
  'blob:',
  'about:',
  'filesystem:',
  'ws:',
  'wss:',
  'ftp:',
]);

function parse(uri: string): URL | undefined {
  try {
    return new URL(uri);
  } catch {
    return undefined;
  }
}

function isLoopbackHttp(url: URL): boolean {
  return url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
}

/** Why a URI may not be registered, or undefined when it may. */
export function redirectUriProblem(uri: string): string | undefined {
  if (uri.length > MAX_REDIRECT_URI_LENGTH) {
    return `redirect URI longer than ${MAX_REDIRECT_URI_LENGTH} characters`;
  }
  const url = parse(uri);
  if (url === undefined) return `redirect URI is not an absolute URI: ${uri}`;
  if (uri.includes('#')) return `redirect URI must not contain a fragment: ${uri}`;
  if (url.username || url.password) return `redirect URI must not carry credentials: ${uri}`;
  if (url.protocol === 'https:' || isLoopbackHttp(url)) return undefined;
  if (url.protocol === 'http:') {
    return `redirect URI must use https unless it is a loopback address: ${uri}`;
  }
  if (FORBIDDEN_SCHEMES.has(url.protocol)) return `redirect URI scheme not allowed: ${uri}`;
  return undefined;
}

function loopbackMatches(registered: URL, requested: URL): boolean {
  return (
    isLoopbackHttp(registered) &&
    isLoopbackHttp(requested) &&
    registered.hostname === requested.hostname &&
    registered.pathname === requested.pathname &&
    registered.search === requested.search
  );
}

/** Whether `requested` may receive the authorization response of a client with `registered`. */
export function isRedirectUriAllowed(registered: readonly string[], requested: string): boolean {
  if (requested.includes('#')) return false;
  const url = parse(requested);
  if (url === undefined) return false;
  if (registered.length === 0) return isLoopbackHttp(url);
  return registered.some((candidate) => {
    if (candidate === requested) return true;
    const registeredUrl = parse(candidate);
    return registeredUrl !== undefined && loopbackMatches(registeredUrl, url);
  });
}
