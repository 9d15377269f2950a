import { MAX_REDIRECT_URIS, redirectUriProblem } from '@mcp-identity/common';

/** Largest registration request body (RFC 7591 metadata is small; this bounds storage). */
export const MAX_REGISTRATION_BYTES = 16_384;
export const MAX_CLIENT_NAME_LENGTH = 200;
export const MAX_SCOPE_LENGTH = 2_000;

/** The metadata the IdP keeps from an RFC 7591 registration request. */
export type ClientMetadata = { name: string; redirectUris: string[]; scope: string | undefined };

/** An RFC 7591 §3.2.2 error: `invalid_redirect_uri` or `invalid_client_metadata`. */
export type RegistrationProblem = {
  error: 'invalid_redirect_uri' | 'invalid_client_metadata';
  description: string;
};

const problem = (
  error: RegistrationProblem['error'],
  description: string,
): { ok: false; problem: RegistrationProblem } => ({ ok: false, problem: { error, description } });

/**
 * Validates a parsed registration request: public clients only, redirect URIs by the shared
 * allow-list policy (https, loopback http, reverse-domain private-use schemes; never
 * user-info or a fragment), and bounded sizes for every field kept.
 */
export function readClientMetadata(
  body: Record<string, unknown>,
): { ok: true; metadata: ClientMetadata } | { ok: false; problem: RegistrationProblem } {
  const uris = body.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0) {
    return problem('invalid_redirect_uri', 'redirect_uris is required');
  }
  if (uris.length > MAX_REDIRECT_URIS) {
    return problem(
      'invalid_redirect_uri',
      `At most ${MAX_REDIRECT_URIS} redirect URIs may be registered`,
    );
  }
  for (const uri of uris) {
    if (typeof uri !== 'string')
      return problem('invalid_redirect_uri', 'redirect_uris must be strings');
    const issue = redirectUriProblem(uri);
    if (issue) return problem('invalid_redirect_uri', issue);
  }
  const method = body.token_endpoint_auth_method ?? 'none';
  if (method !== 'none') {
    return problem(
      'invalid_client_metadata',
      'Only public clients (token_endpoint_auth_method none) may register',
    );
  }
  const name = body.client_name;
  if (name !== undefined && typeof name !== 'string') {
    return problem('invalid_client_metadata', 'client_name must be a string');
  }
  if (typeof name === 'string' && name.length > MAX_CLIENT_NAME_LENGTH) {
    return problem(
      'invalid_client_metadata',
      `client_name must be at most ${MAX_CLIENT_NAME_LENGTH} characters`,
    );
  }
  const scope = body.scope;
  if (scope !== undefined && typeof scope !== 'string') {
    return problem('invalid_client_metadata', 'scope must be a space-separated string');
  }
  if (typeof scope === 'string' && scope.length > MAX_SCOPE_LENGTH) {
    return problem(
      'invalid_client_metadata',
      `scope must be at most ${MAX_SCOPE_LENGTH} characters`,
    );
  }
  return {
    ok: true,
    metadata: {
      name: name?.trim() ? name : 'Dynamic client',
      redirectUris: uris as string[],
      scope,
    },
  };
}
