/**
 * The redirect URI policy of both authorization servers, an allow-list (RFC 9700 §4.1,
 * RFC 8252): https; http only to a loopback host; private-use schemes only where a reverse
 * domain name identifies the app (RFC 8252 §7.1), in the scheme (`com.example.app:/cb`) or,
 * as clients such as Cursor ship it, as the authority of a one-word scheme
 * (`cursor://anysphere.cursor-retrieval/oauth/callback`). Schemes a browser or the system
 * handles itself are never private-use ones. Never user-info, never a fragment
 * (RFC 6749 §3.1.2).
 */

export const MAX_REDIRECT_URIS = 10;
export const MAX_REDIRECT_URI_LENGTH = 2000;

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
/**
 * A reverse-domain scheme (`com.example.app`): at least two dot-separated labels, each
 * starting with a letter (RFC 3986 §3.1 scheme characters, RFC 8252 §7.1).
 */
const REVERSE_DOMAIN_SCHEME = /^[a-z][a-z0-9+-]*(\.[a-z][a-z0-9+-]*)+:$/;
/** A one-word scheme (RFC 3986 §3.1 characters, no dot). */
const ONE_WORD_SCHEME = /^[a-z][a-z0-9+-]*:$/;
/** A reverse domain name as an authority: two or more DNS labels, no port. */
const REVERSE_DOMAIN_AUTHORITY =
  /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$/i;
/**
 * Schemes with a meaning of their own to browsers or operating systems: code execution
 * (`javascript:`, `vbscript:`), content inline or local (`data:`, `blob:`, `file:`,
 * `filesystem:`, `about:`, `view-source:`, `jar:`), or another protocol (`ws:`, `ftp:`,
 * `mailto:`, `intent:`, …). Whatever follows them, they are no app's private-use scheme.
 */
const RESERVED_SCHEMES = new Set([
  'javascript:',
  'vbscript:',
  'livescript:',
  'data:',
  'blob:',
  'file:',
  'filesystem:',
  'about:',
  'view-source:',
  'jar:',
  'chrome:',
  'chrome-extension:',
  'moz-extension:',
  'resource:',
  'intent:',
  'ws:',
  'wss:',
  'ftp:',
  'mailto:',
  'tel:',
  'sms:',
  'urn:',
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

/** RFC 8252 §7.1: a private-use scheme that a reverse domain name ties to one app. */
function isPrivateUseScheme(url: URL): boolean {
  if (RESERVED_SCHEMES.has(url.protocol) || url.protocol.includes('script')) return false;
  if (REVERSE_DOMAIN_SCHEME.test(url.protocol)) return true;
  return (
    ONE_WORD_SCHEME.test(url.protocol) &&
    url.port === '' &&
    REVERSE_DOMAIN_AUTHORITY.test(url.hostname)
  );
}

/** Why `uri` may not be registered as a redirect URI, or undefined when it may. */
export function redirectUriProblem(uri: string): string | undefined {
  if (uri.length > MAX_REDIRECT_URI_LENGTH) {
    return `redirect URI longer than ${MAX_REDIRECT_URI_LENGTH} characters`;
  }
  // RFC 3986 §2: a URI holds no raw white space or control character (the URL parser would
  // quietly encode or drop them, so the registered string would not be the one redirected to).
  if (/[\s\p{Cc}]/u.test(uri)) {
    return `redirect URI must not contain white space or control characters: ${JSON.stringify(uri)}`;
  }
  const url = parse(uri);
  if (url === undefined) return `redirect URI is not an absolute URI: ${uri}`;
  if (uri.includes('#')) return `redirect URI must not contain a fragment: ${uri}`;
  if (url.username !== '' || url.password !== '' || /^[^:]*:\/\/[^/?]*@/.test(uri)) {
    return `redirect URI must not carry user information: ${uri}`;
  }
  if (url.protocol === 'https:') {
    return url.hostname === '' ? `redirect URI has no host: ${uri}` : undefined;
  }
  if (url.protocol === 'http:') {
    return isLoopbackHttp(url)
      ? undefined
      : `redirect URI must use https unless it is a loopback address: ${uri}`;
  }
  if (isPrivateUseScheme(url)) return undefined;
  return `redirect URI scheme must be https, loopback http or a reverse-domain private-use scheme (com.example.app:/cb, myapp://app.example.com/cb): ${uri}`;
}

/** The same URI except for the port: RFC 8252 §7.3 lets native apps pick any loopback port. */
function loopbackMatches(registered: URL, requested: URL): boolean {
  return (
    isLoopbackHttp(registered) &&
    isLoopbackHttp(requested) &&
    registered.hostname === requested.hostname &&
    registered.pathname === requested.pathname &&
    registered.search === requested.search
  );
}

/**
 * Whether `requested` may receive the authorization response of a client that registered
 * `registered`: exact string match, or a loopback http URI differing only in its port. A
 * client registered without any URI may use loopback http URIs only.
 */
export function isRedirectUriAllowed(registered: readonly string[], requested: string): boolean {
  if (redirectUriProblem(requested) !== undefined) return false;
  const url = parse(requested);
  if (url === undefined) return false;
  if (registered.length === 0) return isLoopbackHttp(url);
  return registered.some((candidate) => {
    if (candidate === requested) return true;
    const registeredUrl = parse(candidate);
    return registeredUrl !== undefined && loopbackMatches(registeredUrl, url);
  });
}

/**
 * What a login page names as the place the browser goes back to: the host of `redirectUri`, or
 * for a private-use URI without one (`com.example.app:/cb`) its scheme.
 */
export function redirectUriHost(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.host === '' ? url.protocol : url.host;
}
