/** Builds an RFC 6750 `WWW-Authenticate: Bearer ...` value in the order WSO2 emits. */
export function bearerChallenge(
  resourceMetadataUrl: string,
  scopes: string[],
  error: 'invalid_token' | 'insufficient_scope',
): string {
  const parts = [`resource_metadata="${resourceMetadataUrl}"`];
  if (scopes.length > 0) parts.push(`scope="${scopes.join(' ')}"`);
  parts.push(`error="${error}"`);
  return `Bearer ${parts.join(', ')}`;
}

/** A decision to answer the client directly instead of forwarding. */
export interface Refusal {
  status: 401 | 403;
  challenge: string;
  body: { error: string; message: string };
  /** Why, for the log only. */
  reason: string;
  missingScopes: string[];
}

export const AUTHENTICATION_FAILED = { error: 'Unauthorized', message: 'Authentication failed' };

/** 401 for a call an `mcp-authz` rule governs when no `mcp-auth` policy can authenticate it. */
export function authenticationRequired(resourceMetadataUrl: string): Refusal {
  return {
    status: 401,
    challenge: bearerChallenge(resourceMetadataUrl, [], 'invalid_token'),
    body: {
      error: 'Unauthorized',
      message: 'Unauthorized: authentication required for this MCP capability',
    },
    reason: 'governed call without an mcp-auth policy',
    missingScopes: [],
  };
}

/** 403 step-up challenge naming the scopes the token lacks (sorted, so clients see one order). */
export function insufficientScope(
  resourceMetadataUrl: string,
  missingScopes: string[],
  reason: string,
): Refusal {
  return {
    status: 403,
    challenge: bearerChallenge(resourceMetadataUrl, missingScopes, 'insufficient_scope'),
    body: {
      error: 'Forbidden',
      message: 'Forbidden: insufficient permissions to access this MCP resource',
    },
    reason,
    missingScopes,
  };
}
