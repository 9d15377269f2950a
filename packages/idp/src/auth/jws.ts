import { type KeyObject, sign, verify } from 'node:crypto';
import { promisify } from 'node:util';

/**
 * RS256 compact JWS (RFC 7515 §7.1, RFC 7518 §3.3) with node:crypto's one-shot sign and verify
 * on cached KeyObjects. The IdP signs a token on every token request and verifies one on every
 * SCIM request; jose goes through WebCrypto's job and promise machinery for both, which costs
 * more than the RSA operation it wraps on this path.
 */

// With a callback, the RSA private-key operation (~0.2 ms, the token endpoint's largest cost)
// runs on libuv's thread pool: the event loop keeps serving SCIM requests meanwhile, and a
// second core can sign. Alone, a request is answered sooner and for less CPU on the event loop:
// the hop to the pool and back wakes two threads (futex, eventfd, epoll) for nothing.
const signOnThreadPool = promisify(sign);

const BASE64URL = /^[A-Za-z0-9_-]*$/;

function encodeJson(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/**
 * The encoded header of the last token signed, and the decoded header of the last token
 * verified: every token of one key has the same header, so each is worked out once per key.
 */
let lastSigned: { kid: string; typ: string | undefined; encoded: string } | undefined;
let lastVerified: { encoded: string; header: Record<string, unknown> } | undefined;

function encodeHeader(header: { alg: 'RS256'; kid: string; typ?: string }): string {
  if (lastSigned?.kid !== header.kid || lastSigned.typ !== header.typ) {
    lastSigned = { kid: header.kid, typ: header.typ, encoded: encodeJson(header) };
  }
  return lastSigned.encoded;
}

function decodeHeader(encoded: string): Record<string, unknown> | undefined {
  if (lastVerified?.encoded === encoded) return lastVerified.header;
  const header = decodeJsonObject(encoded);
  if (header) lastVerified = { encoded, header };
  return header;
}

function decodeJsonObject(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `header` must name `alg: 'RS256'`; the key is an RSA private key. `onEventLoop`: sign on the
 * calling thread (when nothing else waits for the event loop).
 */
export async function signRs256(
  header: { alg: 'RS256'; kid: string; typ?: string },
  payload: object,
  key: KeyObject,
  onEventLoop = false,
): Promise<string> {
  const input = `${encodeHeader(header)}.${encodeJson(payload)}`;
  const data = Buffer.from(input);
  const signature = onEventLoop
    ? sign('sha256', data, key)
    : await signOnThreadPool('sha256', data, key);
  return `${input}.${signature.toString('base64url')}`;
}

/**
 * The payload of a compact JWS whose RS256 signature verifies with the key `keyFor` returns for
 * its `kid`; undefined for anything else: not three base64url parts, another `alg` (`none`
 * included), a `crit` header (no extension is understood, RFC 7515 §4.1.11), an unknown `kid`,
 * a bad signature, or a payload that is not a JSON object. Claims are the caller's to check.
 * `signedHere`: the caller signed these exact bytes itself, so the RSA check is skipped; every
 * other check still applies.
 */
export function verifyRs256(
  token: string,
  keyFor: (kid: string) => KeyObject | undefined,
  signedHere = false,
): Record<string, unknown> | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const [header64, payload64, signature64] = parts as [string, string, string];
  if (!BASE64URL.test(header64) || !BASE64URL.test(payload64) || !BASE64URL.test(signature64)) {
    return undefined;
  }
  const header = decodeHeader(header64);
  if (header?.alg !== 'RS256' || 'crit' in header || typeof header.kid !== 'string') {
    return undefined;
  }
  const key = keyFor(header.kid);
  if (!key) return undefined;
  if (!signedHere) {
    const signed = Buffer.from(`${header64}.${payload64}`);
    if (!verify('sha256', signed, key, Buffer.from(signature64, 'base64url'))) return undefined;
  }
  return decodeJsonObject(payload64);
}
