import { bearerChallenge, jsonRpcError } from '@mcp-identity/common';
import type { Exchange, Refusal } from './policy.js';

const AUTHENTICATION_FAILED = { error: 'Unauthorized', message: 'Authentication failed' };

/**
 * 401 naming the scopes the proxy advertises, so a client asks for what its tools need
 * (MCP authorization, "Scope Selection Strategy").
 */
export function unauthenticated(
  exchange: Exchange,
  reason: string,
  body: { error: string; message: string } = AUTHENTICATION_FAILED,
): Refusal {
  return {
    status: 401,
    headers: {
      // WSO2's order of the parameters.
      'www-authenticate': bearerChallenge({
        resource_metadata: exchange.resourceMetadataUrl,
        scope: exchange.scopesSupported.join(' '),
        error: 'invalid_token',
      }),
    },
    body,
    decision: 'unauthenticated',
    reason,
    missingScopes: [],
  };
}

/** 403 step-up challenge naming the scopes the token lacks (sorted, so clients see one order). */
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
 * 503 when a token cannot be judged because its issuer's keys cannot be fetched: neither a
 * 401 (the token may well be valid; a client would throw it away) nor a wait. `Retry-After`
 * says when the gateway tries the JWKS again; the JSON-RPC error is the MCP endpoint's shape.
 */
export function keysUnavailable(
  exchange: Exchange,
  retryAfterSeconds: number,
  reason: string,
): Refusal {
  return serviceUnavailable(
    exchange,
    retryAfterSeconds,
    "The authorization server's signing keys cannot be fetched; retry later",
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
