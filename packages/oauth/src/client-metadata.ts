/**
 * The display metadata a client registers (RFC 7591 §2): `client_name`, `logo_uri`,
 * `client_uri`. All self-asserted, so they are kept only when harmless to show: a short
 * single-line name, and URIs a browser can open without running anything (https, or http to
 * a loopback host). Anything else is dropped — registration still succeeds (RFC 7591 §3.2.1
 * lets the server replace or omit values) and the response says what was kept.
 */

export interface ClientDisplay {
  clientName?: string;
  logoUri?: string;
  clientUri?: string;
}

export const MAX_CLIENT_NAME_LENGTH = 100;
const MAX_DISPLAY_URI_LENGTH = 2000;
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

function clientName(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  // Control and bidirectional-override characters could make one name look like another.
  const name = value.replace(/[\p{Cc}\p{Cf}]/gu, '').trim();
  return name === '' || name.length > MAX_CLIENT_NAME_LENGTH ? undefined : name;
}

/** An https URI, or http to a loopback host; never with user information. */
export function isSafeDisplayUri(value: unknown): value is string {
  if (typeof value !== 'string' || value.length > MAX_DISPLAY_URI_LENGTH) return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.username !== '' || url.password !== '') return false;
  return (
    (url.protocol === 'https:' && url.hostname !== '') ||
    (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))
  );
}

export function readClientDisplay(body: Record<string, unknown>): ClientDisplay {
  const display: ClientDisplay = {};
  const name = clientName(body.client_name);
  if (name !== undefined) display.clientName = name;
  if (isSafeDisplayUri(body.logo_uri)) display.logoUri = body.logo_uri;
  if (isSafeDisplayUri(body.client_uri)) display.clientUri = body.client_uri;
  return display;
}
