/**
 * Why a run ended without a result the caller can rely on, and whether it may have changed
 * anything at the API: typed, so that a caller (the MCP tools) tells failures apart without
 * reading their messages.
 */
import { McpIdentityError } from '@mcp-identity/common';

/** What failed (the package README, *Failures*, lists each kind). */
export type FailureKind =
  /** the client-credentials token request failed: refused, unreachable, timed out, unusable */
  | 'token'
  /** the API request could not be sent, or its connection failed before an answer */
  | 'connection'
  /** no complete answer within the request timeout */
  | 'timeout'
  /** the API answered 5xx and the workflow stopped there */
  | 'server-error'
  /** an answer that cannot be used: declared JSON but unparsable, or over the size limit */
  | 'bad-response'
  /** the run itself: unknown workflow, a step loop, a failed dependency, an unbuildable request */
  | 'workflow';

/**
 * Whether the API may have changed: `no` when no state-changing request was sent or each one
 * was refused (4xx); `yes` when one was accepted (2xx, 3xx) before the failure; `unknown` when
 * one got no answer, a 5xx, or an answer cut off.
 */
export type Applied = 'no' | 'yes' | 'unknown';

export interface RunFailure {
  kind: FailureKind;
  applied: Applied;
  /**
   * Running the workflow again cannot repeat a change: every state-changing request whose
   * outcome is not `no` used an idempotent method (RFC 9110 §9.2.2).
   */
  retrySafe: boolean;
}

/** A failure of a run that carries its kind, so callers need not parse the message. */
export class RunFailureError extends McpIdentityError {
  readonly code: string = 'ERR_ARAZZO_RUN_FAILURE';

  constructor(
    message: string,
    readonly kind: FailureKind,
  ) {
    super(message);
  }
}

// RFC 9110 §9.2.1 and §9.2.2.
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE']);
const IDEMPOTENT_METHODS = new Set([...SAFE_METHODS, 'PUT', 'DELETE']);

const RANK: Record<Applied, number> = { no: 0, yes: 1, unknown: 2 };

/** What one request did to the API, from whether it was sent and the status it got. */
function appliedBy(method: string, sent: boolean, status: number | undefined): Applied {
  if (!sent || SAFE_METHODS.has(method)) return 'no';
  if (status === undefined || status >= 500) return 'unknown';
  return status >= 400 ? 'no' : 'yes';
}

/** The API requests of one run, as far as they may have changed anything. */
export class RunChanges {
  private applied: Applied = 'no';
  private retrySafe = true;

  /** One API request: `sent` once it went out on a connection; `status` if an answer began. */
  record(method: string, sent: boolean, status?: number): void {
    const upper = method.toUpperCase();
    const applied = appliedBy(upper, sent, status);
    if (applied === 'no') return;
    if (!IDEMPOTENT_METHODS.has(upper)) this.retrySafe = false;
    if (RANK[applied] > RANK[this.applied]) this.applied = applied;
  }

  failure(kind: FailureKind): RunFailure {
    return { kind, applied: this.applied, retrySafe: this.retrySafe };
  }
}
