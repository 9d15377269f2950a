/**
 * OAuth 2.0 Token Exchange (RFC 8693): the identifiers the IdP's grant, the gateway's and the
 * SCIM MCP server's exchanges all speak, and the request form they send.
 */

/** RFC 8693 §2.1: the grant type of a token-exchange request. */
export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange' as const;

/** RFC 8693 §3: the token type of an OAuth 2.0 access token. */
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token' as const;

export interface TokenExchangeRequest {
  /** The RFC 8707 resource the exchanged token is for. */
  resource: string;
  /** The scopes asked for; none: the authorization server's choice. */
  scopes?: readonly string[];
}

/**
 * The form of an exchange of access tokens (RFC 8693 §2.1) without its `subject_token`, which
 * the caller sets per request (`form.set('subject_token', token)`), so a form built once serves
 * every caller.
 */
export function tokenExchangeForm(request: TokenExchangeRequest): URLSearchParams {
  const form = new URLSearchParams({
    grant_type: TOKEN_EXCHANGE_GRANT,
    subject_token_type: ACCESS_TOKEN_TYPE,
    resource: request.resource,
  });
  if (request.scopes && request.scopes.length > 0) form.set('scope', request.scopes.join(' '));
  return form;
}
