import { bearerChallenge, jsonRpcError } from '@mcp-identity/common';
import type { FailedCheck } from '../auth/verifier.js';
import type { Exchange, Refusal } from './policy.js';

const AUTHENTICATION_FAILED = { error: 'Unauthorized', message: 'Authentication failed' };

/**
 * The public words for each failed check: the 401's `error_description` (RFC 6750 §3), so a
 * user can tell why authentication failed. They name the check, never the token or a claim's
 * value, and keep to the characters §3 allows (no `"` or `\`). The audit line keeps the
 * detailed reason.
 */
const CHECK_DESCRIPTIONS: Readonly<Record<FailedCheck, string>> = {
  no_token: 'no access token',
  malformed_header: 'the Authorization header is not a Bearer token',
  malformed: 'the token is malformed',
  algorithm: 'the token is signed with an algorithm that is not accepted',
  unknown_issuer: 'the token is from an unknown issuer',
  issuer_not_accepted: 'the token issuer is not accepted for this resource',
  unknown_key: 'the token is signed with a key its issuer does not publish',
  bad_signature: 'the token signature is invalid',
  expired: 'the token expired',
  not_yet_valid: 'the token is not yet valid',
  issued_in_future: 'the token is issued in the future',
  invalid_claims: 'the token claims are invalid',
  audience: 'the token audience is not this resource',
  inactive: 'the token is not active',
};

/**
 * 401 naming the scopes the proxy advertises, so a client asks for what its tools need
 * (MCP authorization, "Scope Selection Strategy"); with `check`, the `error_description` says
 * which check the token failed.
 */
export function unauthenticated(
  exchange: Exchange,
  reason: string,
  body: { error: string; message: string } = AUTHENTICATION_FAILED,
  check?: FailedCheck,
): Refusal {
  return {
    status: 401,
    headers: {
      // WSO2's order of the parameters; error_description after them (system spec §5.2).
      'www-authenticate': bearerChallenge({
        resource_metadata: exchange.resourceMetadataUrl,
        scope: exchange.scopesSupported.join(' '),
        error: 'invalid_token',
        error_description: check === undefined ? undefined : CHECK_DESCRIPTIONS[check],
      }),
    },
    body,
    decision: 'unauthenticated',
    reason,
    missingScopes: [],
  };
}

/**
 * The 403's `error_description`: the scopes named for people (the MCP client's user, who may
 * have to ask for them). Several may be all of them (`allOf`) or any one (`anyOf`): the words
 * claim neither.
 */
function lackedScopes(missingScopes: readonly string[]): string | undefined {
  if (missingScopes.length === 0) return undefined;
  if (missingScopes.length === 1) return `the token lacks the scope ${missingScopes[0]}`;
  return `the token lacks scopes this call needs: ${missingScopes.join(' ')}`;
}

/** 401 for a token (or its absence) that failed `check`: the challenge says which. */
export function invalidToken(exchange: Exchange, check: FailedCheck, reason: string): Refusal {
  return unauthenticated(exchange, reason, AUTHENTICATION_FAILED, check);
}

/**
 * 429 when a caller's address sent more tokens the gateway has not seen than it introspects
 * per minute: not a 401 (the token may be valid), and `Retry-After` says when to try again.
 */
export function tooManyUnknownTokens(
  exchange: Exchange,
  retryAfterSeconds: number,
  reason: string,
): Refusal {
  return {
    status: 429,
    headers: { 'retry-after': String(retryAfterSeconds) },
    body: jsonRpcError(
      exchange.call?.id ?? null,
      -32000,
      'Too many tokens to verify from this address; retry later',
      { retryAfterSeconds },
    ),
    decision: 'rate_limited',
    reason,
    missingScopes: [],
  };
}

/**
 * 403 step-up challenge naming the scopes the token lacks (sorted, so clients see one order),
 * in `scope` and, for people, in `error_description`.
 */
export function insufficientScope(
  exchange: Exchange,
  missingScopes: readonly string[],
  reason: string,
): Refusal {
  return {
    status: 403,
    headers: {
      'www-authenticate': bearerChallenge({
        resource_metadata: exchange.resourceMetadataUrl,
        scope: missingScopes.join(' '),
        error: 'insufficient_scope',
        error_description: lackedScopes(missingScopes),
      }),
    },
    body: {
      error: 'Forbidden',
      message: 'Forbidden: insufficient permissions to access this MCP resource',
    },
    decision: 'forbidden',
    reason,
    missingScopes,
  };
}

/**
 * 503 when a token cannot be judged because its issuer's keys cannot be fetched or its
 * introspection endpoint does not answer: neither a 401 (the token may well be valid; a client
 * would throw it away) nor a wait. `Retry-After` says when the gateway tries the endpoint
 * again; the JSON-RPC error is the MCP endpoint's shape.
 */
export function keysUnavailable(
  exchange: Exchange,
  retryAfterSeconds: number,
  reason: string,
): Refusal {
  return serviceUnavailable(
    exchange,
    retryAfterSeconds,
    'The authorization server cannot be reached to verify the token; retry later',
    reason,
  );
}

/** 503 with `Retry-After` and a JSON-RPC error: a policy cannot decide now (a store is down). */
export function serviceUnavailable(
  exchange: Exchange,
  retryAfterSeconds: number,
  message: string,
  reason: string,
): Refusal {
  return {
    status: 503,
    headers: { 'retry-after': String(retryAfterSeconds) },
    body: jsonRpcError(exchange.call?.id ?? null, -32000, message, { retryAfterSeconds }),
    decision: 'unavailable',
    reason,
    missingScopes: [],
  };
}
