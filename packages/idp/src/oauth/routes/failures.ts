import { OAuthError } from '@mcp-identity/common';

/**
 * Every refusal of the IdP's OAuth endpoints, with the code (and so the status) and the
 * description it is sent with. Clients and tests match these texts: change them here only.
 */
export const failure = {
  notForm: () =>
    new OAuthError('invalid_request', 'The request must be application/x-www-form-urlencoded'),
  notJson: () => new OAuthError('invalid_client_metadata', 'The request must be application/json'),
  notJsonObject: () =>
    new OAuthError('invalid_client_metadata', 'The request body must be a JSON object'),
  missingGrantType: () => new OAuthError('invalid_request', 'Missing grant_type parameter'),
  missingToken: () => new OAuthError('invalid_request', 'Missing token parameter'),
  twoClientAuthMethods: () =>
    new OAuthError('invalid_request', 'Use only one client authentication method'),
  unsupportedGrantType: () => new OAuthError('unsupported_grant_type', 'Unsupported grant type'),
  /** A scheme other than Basic: the challenge names the one we take. */
  unsupportedClientAuth: () =>
    new OAuthError('invalid_client', 'Unsupported client authentication', {
      basicChallenge: true,
    }),
  /** RFC 6749 §5.2: a client that tried Basic is challenged again. */
  clientAuthFailed: (triedBasic: boolean) =>
    new OAuthError('invalid_client', 'Client authentication failed', {
      basicChallenge: triedBasic,
    }),
  introspectionNeedsAuth: () =>
    new OAuthError('invalid_client', 'Introspection requires client authentication'),
  grantNotAllowed: (grant: string) =>
    new OAuthError('unauthorized_client', `The client is not allowed the ${grant} grant`),
  publicClientCredentials: () =>
    new OAuthError('unauthorized_client', 'Public clients cannot use client_credentials'),
  invalidCode: () =>
    new OAuthError('invalid_grant', 'The authorization code is invalid or expired'),
  codeMismatch: () =>
    new OAuthError('invalid_grant', 'The authorization code does not match the request'),
  pkceFailed: () => new OAuthError('invalid_grant', 'PKCE verification failed'),
  inactiveUser: () => new OAuthError('invalid_grant', 'The user is no longer active'),
  invalidRefreshToken: () =>
    new OAuthError('invalid_grant', 'The refresh token is invalid or expired'),
  scopeExceeded: () =>
    new OAuthError('invalid_scope', 'The requested scope exceeds the granted scope'),
  oneResource: () => new OAuthError('invalid_target', 'Only one resource may be requested'),
  unknownResource: () =>
    new OAuthError('invalid_target', 'The resource is unknown or not available to this client'),
  resourceDiffers: () =>
    new OAuthError('invalid_target', 'The resource differs from the authorized one'),
  // RFC 8693 token exchange.
  missingParameter: (name: string) =>
    new OAuthError('invalid_request', `Missing ${name} parameter`),
  repeatedParameter: (name: string) =>
    new OAuthError('invalid_request', `The ${name} parameter must be given once`),
  unsupportedParameter: (name: string) =>
    new OAuthError('invalid_request', `The ${name} parameter is not supported`),
  unsupportedTokenType: (name: string) =>
    new OAuthError('invalid_request', `Unsupported ${name}: only access tokens are exchanged`),
  invalidSubjectToken: () =>
    new OAuthError(
      'invalid_grant',
      'The subject token is invalid, expired or revoked, or its user is no longer active',
    ),
  applicationSubjectToken: () =>
    new OAuthError('invalid_grant', 'The subject token was issued to an application, not a user'),
  foreignSubjectAudience: () =>
    new OAuthError(
      'invalid_grant',
      'The subject token is not for an audience this client may exchange',
    ),
  exchangeTargetRefused: () =>
    new OAuthError('invalid_target', 'This client may not exchange tokens for the resource'),
  unknownScope: (scopes: readonly string[]) =>
    new OAuthError('invalid_scope', `Unknown scope: ${scopes.join(' ')}`),
} as const;
