import { McpIdentityError } from '@mcp-identity/common';

/**
 * How an allowed request's exchange with its upstream failed, when it did: the audit line's
 * `upstreamFailure`, beside the decision and the `upstreamStatus` (README, *Audit log*).
 */
export type UpstreamFailure =
  /** No connection could be made: the request was not sent. */
  | 'connect_error'
  /** The upstream fell silent for `limits.idle_timeout`, before or during its answer. */
  | 'timeout'
  /** The connection broke after the request was sent: it may have been applied. */
  | 'connection_lost'
  /** Refused unsent: every connection busy and `limits.upstream_queue_length` waiting. */
  | 'queue_full'
  /** Refused unsent: no connection freed within `limits.upstream_queue_timeout`. */
  | 'queue_timeout'
  /** The answer would have taken the buffered answers past `limits.max_buffered_answer_bytes`. */
  | 'answer_budget'
  /** A list answer the gateway could not read to filter (too large, corrupt, unknown coding). */
  | 'unfilterable'
  /** The client went away before the answer was complete. */
  | 'client_closed';

/** An error that says itself which failure it is. */
export class ExchangeFailure extends McpIdentityError {
  readonly code = 'ERR_UPSTREAM_EXCHANGE';

  constructor(
    readonly failure: UpstreamFailure,
    message: string,
  ) {
    super(message);
  }
}

/** The client went away: the upstream request is aborted with this. */
export const clientGone = () =>
  new ExchangeFailure('client_closed', 'client closed the connection');

/** undici's and the system's codes for a connection that was never made (nothing was sent). */
const NOT_CONNECTED = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
]);
/** A TLS handshake that failed (certificate verification and the like): nothing was sent. */
const TLS_FAILURE = /CERT|SIGNATURE|^ERR_TLS_|^ERR_SSL_/;
const TIMED_OUT = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);
/** Streams ended because the client's side went away. */
const CLIENT_CLOSED = new Set(['ERR_STREAM_PREMATURE_CLOSE', 'ABORT_ERR', 'UND_ERR_ABORTED']);
const WIRE_FAILURE = new Set([
  'UND_ERR_SOCKET',
  'ECONNRESET',
  'EPIPE',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
  'UND_ERR_INFO',
]);

/**
 * The failure an error stands for, from its class or code; undefined for an error that is
 * none of the known ones (a decoder's, a parser's), which the caller names.
 */
export function failureOf(error: unknown): UpstreamFailure | undefined {
  if (error instanceof ExchangeFailure) return error.failure;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return undefined;
  if (NOT_CONNECTED.has(code) || TLS_FAILURE.test(code)) return 'connect_error';
  if (TIMED_OUT.has(code)) return 'timeout';
  if (CLIENT_CLOSED.has(code)) return 'client_closed';
  if (WIRE_FAILURE.has(code) || code.startsWith('HPE_')) return 'connection_lost';
  return undefined;
}

/** The failures of a request the upstream never answered, with the client's answer to each. */
export const UNANSWERED = {
  connect_error: {
    status: 502,
    reason: 'upstream unreachable',
    message: 'Upstream MCP server unreachable',
  },
  timeout: { status: 504, reason: 'upstream timed out', message: 'Upstream MCP server timed out' },
  connection_lost: {
    status: 502,
    reason: 'upstream connection lost',
    message:
      'Upstream MCP server closed the connection before answering; the request may have been applied',
  },
} as const;

export type Unanswered = keyof typeof UNANSWERED;

/** How a request the upstream did not answer failed: a connection never made, or lost after. */
export function unansweredFailure(error: unknown): Unanswered {
  const failure = failureOf(error);
  return failure === 'connect_error' || failure === 'timeout' ? failure : 'connection_lost';
}
