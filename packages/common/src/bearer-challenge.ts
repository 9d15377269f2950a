/**
 * The parameters of a `WWW-Authenticate: Bearer` challenge, written in the order given (each
 * surface keeps the order its clients and tests know; RFC 6750 §3 sets none). An undefined
 * value is left out.
 */
export interface BearerChallengeParams {
  realm?: string | undefined;
  /** RFC 6750 §3.1: `invalid_request`, `invalid_token` or `insufficient_scope`. */
  error?: 'invalid_request' | 'invalid_token' | 'insufficient_scope' | undefined;
  error_description?: string | undefined;
  /** Space-separated scopes (RFC 6750 §3); left out when empty. */
  scope?: string | undefined;
  /** The protected resource metadata URL (RFC 9728 §5.1). */
  resource_metadata?: string | undefined;
}

/** RFC 9110 §5.6.4 quoted-string: a backslash and a double quote are escaped. */
function quoted(value: string): string {
  return `"${value.replace(/[\\"]/g, '\\$&')}"`;
}

/**
 * The `WWW-Authenticate` value of a Bearer challenge (RFC 6750 §3), `Bearer` alone when no
 * parameter is given: every auth-param is a quoted string.
 */
export function bearerChallenge(params: BearerChallengeParams = {}): string {
  let challenge = 'Bearer';
  let separator = ' ';
  for (const name in params) {
    const value = params[name as keyof BearerChallengeParams];
    if (value === undefined || (name === 'scope' && value === '')) continue;
    challenge += `${separator}${name}=${quoted(value)}`;
    separator = ', ';
  }
  return challenge;
}
