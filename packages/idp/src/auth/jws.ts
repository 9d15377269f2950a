import { type KeyObject, sign } from 'node:crypto';
import { promisify } from 'node:util';

/**
 * RS256 compact JWS signing (RFC 7515 §7.1, RFC 7518 §3.3) with node:crypto's one-shot sign on
 * cached KeyObjects. The IdP signs a token on every token request; jose goes through WebCrypto's
 * job and promise machinery, which costs more than the RSA operation it wraps on this path.
 * Verification is common's `verifyJwt`, as everywhere else.
 */

// With a callback, the RSA private-key operation (~0.2 ms, the token endpoint's largest cost)
// runs on libuv's thread pool: the event loop keeps serving SCIM requests meanwhile, and a
// second core can sign. Alone, a request is answered sooner and for less CPU on the event loop:
// the hop to the pool and back wakes two threads (futex, eventfd, epoll) for nothing.
const signOnThreadPool = promisify(sign);

function encodeJson(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** The encoded header of the last token signed: every token of one key has the same header. */
let lastSigned: { kid: string; typ: string | undefined; encoded: string } | undefined;

function encodeHeader(header: { alg: 'RS256'; kid: string; typ?: string }): string {
  if (lastSigned?.kid !== header.kid || lastSigned.typ !== header.typ) {
    lastSigned = { kid: header.kid, typ: header.typ, encoded: encodeJson(header) };
  }
  return lastSigned.encoded;
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
