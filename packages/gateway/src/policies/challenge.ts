import type { Exchange, Refusal } from './policy.js';

/** Builds an RFC 6750 `WWW-Authenticate: Bearer ...` value in the order WSO2 emits. */
function bearerChallenge(
  resourceMetadataUrl: string,
  scopes: readonly string[],
  error: 'invalid_token' | 'insufficient_scope',
): string {
  const parts = [`resource_metadata="${resourceMetadataUrl}"`];
  if (scopes.length > 0) parts.push(`scope="${scopes.join(' ')}"`);
  parts.push(`error="${error}"`);
  return `Bearer ${parts.join(', ')}`;
}

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
      'www-authenticate': bearerChallenge(
        exchange.resourceMetadataUrl,
        exchange.scopesSupported,
        'invalid_token',
      ),
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
      'www-authenticate': bearerChallenge(
        exchange.resourceMetadataUrl,
        missingScopes,
        'insufficient_scope',
      ),
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
