/**
 * The parameters of an authorization request our servers read: RFC 6749 §4.1.1, PKCE
 * (RFC 7636 §4.3) and resource indicators (RFC 8707 §2). Each must be given at most once
 * (RFC 6749 §3.1), `resource` aside where a server accepts several.
 */
export const AUTHORIZATION_REQUEST_PARAMETERS = [
  'client_id',
  'redirect_uri',
  'response_type',
  'code_challenge',
  'code_challenge_method',
  'state',
  'scope',
  'resource',
] as const;
