import type { FastifyReply } from 'fastify';

/**
 * The base of every error the repository's code throws. `code` is stable and machine-readable
 * (`ERR_*`, or the protocol's own vocabulary where the error carries one, as `OAuthError`'s
 * RFC 6749 codes): callers branch on it or on the class, never on the message, which is for
 * people. `name` is the subclass's name; `cause` is the standard `ErrorOptions` one. The shape
 * of jose's `JOSEError` and node-oidc-provider's `OIDCProviderError`.
 */
export abstract class McpIdentityError extends Error {
  abstract readonly code: string;

  constructor(message?: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A broken invariant: a state the code's own construction should have ruled out. */
export class InternalError extends McpIdentityError {
  readonly code = 'ERR_INTERNAL';
}

/** A function or constructor was given an argument it cannot take (a programmer error). */
export class InvalidArgumentError extends McpIdentityError {
  readonly code = 'ERR_INVALID_ARGUMENT';
}

/** A service this process depends on (a database, Redis, a key set) cannot be reached. */
export class UnavailableError extends McpIdentityError {
  readonly code: string = 'ERR_UNAVAILABLE';
}

/** A service answered, but not with what this client can use (a status, a body). */
export class UnexpectedResponseError extends McpIdentityError {
  readonly code = 'ERR_UNEXPECTED_RESPONSE';
}

/** A process or service did not become ready (exited, timed out, never answered healthy). */
export class StartupError extends McpIdentityError {
  readonly code = 'ERR_STARTUP';
}

/** Something named by the caller (a file, a stack, an application, a resource) does not exist. */
export class NotFoundError extends McpIdentityError {
  readonly code: string = 'ERR_NOT_FOUND';
}

/**
 * The OAuth error codes our servers send: RFC 6749 §4.1.2.1 and §5.2, RFC 6750 §3.1, RFC 7009
 * §2.2.1, RFC 7591 §3.2.2 and RFC 8707 §2, plus `too_many_requests` for throttled requests.
 */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'access_denied'
  | 'unsupported_response_type'
  | 'server_error'
  | 'temporarily_unavailable'
  | 'invalid_token'
  | 'insufficient_scope'
  | 'unsupported_token_type'
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata'
  | 'invalid_target'
  | 'too_many_requests';

/**
 * The status each code is answered with unless the caller says otherwise (RFC 6749 §5.2, RFC
 * 6750 §3.1): the one table of both authorization servers (Area A's `oauth` and the IdP), which
 * refuse with an `OAuthError` answered by `sendOAuthError`, each with its own texts.
 */
const DEFAULT_STATUS: Partial<Record<OAuthErrorCode, number>> = {
  invalid_client: 401,
  invalid_token: 401,
  insufficient_scope: 403,
  too_many_requests: 429,
  server_error: 500,
  temporarily_unavailable: 503,
};

export function oauthErrorStatus(code: OAuthErrorCode): number {
  return DEFAULT_STATUS[code] ?? 400;
}

/**
 * An OAuth request refused with `code`; thrown from a route and answered by the server's error
 * handler with `oauthError`. `basicChallenge` adds `WWW-Authenticate: Basic` to a 401
 * invalid_client when the client tried HTTP Basic (RFC 6749 §5.2).
 */
export class OAuthError extends McpIdentityError {
  readonly status: number;
  readonly basicChallenge: boolean;

  constructor(
    readonly code: OAuthErrorCode,
    readonly description: string,
    options: { status?: number; basicChallenge?: boolean } = {},
  ) {
    super(description);
    this.status = options.status ?? oauthErrorStatus(code);
    this.basicChallenge = options.basicChallenge ?? false;
  }
}

/** RFC 6749 §5.2 error body, never cached (it may follow a token request). */
export function oauthError(
  reply: FastifyReply,
  status: number,
  error: OAuthErrorCode,
  description?: string,
): FastifyReply {
  const body: { error: string; error_description?: string } = { error };
  if (description !== undefined) body.error_description = description;
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .header('content-type', 'application/json; charset=utf-8')
    .send(body);
}

/**
 * Answers a refusal thrown as an `OAuthError`: its status (from the table above unless it was
 * given one), its body, and for `basicChallenge` the `Basic` challenge (RFC 6749 §5.2, RFC 7617).
 */
export function sendOAuthError(reply: FastifyReply, error: OAuthError): FastifyReply {
  if (error.basicChallenge) reply.header('www-authenticate', 'Basic realm="oauth2"');
  return oauthError(reply, error.status, error.code, error.description);
}

/** A throttled OAuth request: 429 with `Retry-After` (RFC 6585 §4, RFC 9110 §10.2.3). */
export function oauthTooManyRequests(
  reply: FastifyReply,
  retryAfterSeconds: number,
  description: string,
): FastifyReply {
  reply.header('retry-after', String(retryAfterSeconds));
  return oauthError(reply, 429, 'too_many_requests', description);
}

export const SCIM_ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

export type ScimErrorBody = {
  schemas: [typeof SCIM_ERROR_SCHEMA];
  scimType?: string;
  detail: string;
  status: string;
};

/**
 * RFC 7644 §3.12 error body; `status` is a string there, as WSO2's SCIM layer (charon) sends it,
 * and so is the member order.
 */
export function scimErrorBody(status: number, detail: string, scimType?: string): ScimErrorBody {
  return {
    schemas: [SCIM_ERROR_SCHEMA],
    ...(scimType !== undefined ? { scimType } : {}),
    detail,
    status: String(status),
  };
}

/** The gateway management API's error shape: `{status: "error", message}`. */
export function gatewayError(reply: FastifyReply, status: number, message: string): FastifyReply {
  return reply.code(status).send({ status: 'error', message });
}

export type JsonRpcId = string | number | null;

export interface JsonRpcErrorResponse {
  jsonrpc: '2.0';
  id: JsonRpcId;
  error: { code: number; message: string; data?: unknown };
}

/** A JSON-RPC 2.0 error response object (the caller chooses the HTTP status). */
export function jsonRpcError(
  id: JsonRpcId,
  code: number,
  message: string,
  data?: unknown,
): JsonRpcErrorResponse {
  const error: JsonRpcErrorResponse['error'] = { code, message };
  if (data !== undefined) error.data = data;
  return { jsonrpc: '2.0', id, error };
}

export const JSON_RPC = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
} as const;
