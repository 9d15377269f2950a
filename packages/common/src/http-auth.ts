/**
 * Credentials in the HTTP `Authorization` header. Each parser answers `undefined` for a header
 * that does not follow its syntax, so the caller refuses with its own status and challenge.
 */

/** RFC 6750 §2.1: `Bearer 1*SP b64token`. */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** The token of a `Bearer` header, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  return header === undefined ? undefined : BEARER.exec(header)?.[1];
}

/** RFC 7617 §2: `Basic 1*SP token68`, the token68 being base64 of `user-id ":" password`. */
const BASIC = /^Basic +([A-Za-z0-9+/]+=*) *$/i;

export type BasicCredentials = { user: string; password: string };

/** User id and password of a `Basic` header as sent (RFC 7617), or undefined. */
export function basicCredentials(header: string | undefined): BasicCredentials | undefined {
  const encoded = header === undefined ? undefined : BASIC.exec(header)?.[1];
  if (encoded === undefined) return undefined;
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/**
 * The `Authorization` header of client_secret_basic (RFC 6749 §2.3.1): client id and secret each
 * form-encoded (application/x-www-form-urlencoded) before they are joined and Base64-encoded, so
 * a ':' in the id cannot shift the split.
 */
export function clientSecretBasic(clientId: string, clientSecret: string): string {
  const encode = (value: string) => new URLSearchParams({ v: value }).toString().slice(2);
  return `Basic ${Buffer.from(`${encode(clientId)}:${encode(clientSecret)}`).toString('base64')}`;
}
