import {
  AUTHORIZATION_REQUEST_PARAMETERS,
  clientNetwork,
  FixedWindowThrottle,
  isRedirectUriAllowed,
  McpIdentityError,
  OAuthError,
  type OAuthErrorCode,
  redirectUriHost,
  reserveAll,
  setHtmlSecurityHeaders,
} from '@mcp-identity/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { OAuthClient } from '../document-clients.js';
import { errorPage, loginPage } from '../login-page.js';
import type { OAuthRouteOptions } from './options.js';
import { resolveResource, splitScope } from './scopes.js';

/** The cookie that binds a rendered login form to the browser it was rendered for. */
export const CSRF_COOKIE = 'idp_csrf';

export type AuthorizeParams = Record<string, string>;

/**
 * An authorize request that cannot go on; with a `redirectError` (the OAuth code), the client
 * is told by redirect.
 */
export class AuthorizeError extends McpIdentityError {
  readonly code = 'ERR_AUTHORIZE';

  constructor(
    message: string,
    readonly redirectError?: OAuthErrorCode,
  ) {
    super(message);
  }
}

/**
 * The authorize parameters, each given at most once (RFC 6749 §3.1); `repeated` names those
 * given more than once, which are left out.
 */
export function pickAuthorizeParams(source: Record<string, unknown>): {
  params: AuthorizeParams;
  repeated: string[];
} {
  const params: AuthorizeParams = {};
  const repeated: string[] = [];
  for (const name of AUTHORIZATION_REQUEST_PARAMETERS) {
    const value = source[name];
    if (typeof value === 'string') params[name] = value;
    else if (Array.isArray(value)) repeated.push(name);
  }
  return { params, repeated };
}

export type AuthorizeFlow = ReturnType<typeof createAuthorizeFlow>;

/** What the authorize page (GET) and the login post share: limits, validation, rendering. */
export function createAuthorizeFlow(options: OAuthRouteOptions) {
  const { clients, resources, tokens, transactions, limits, clock } = options;
  // Each rendered form costs a transaction row: counted by address and by network.
  const formsPerIp = new FixedWindowThrottle({
    limit: limits.authorizeRequestsPerIpPerMinute,
    windowMs: 60_000,
    clock,
  });
  const formsPerNetwork = new FixedWindowThrottle({
    limit: limits.authorizeRequestsPerNetworkPerMinute,
    windowMs: 60_000,
    clock,
  });

  /** A 429 page when the address or its network has rendered too many forms this minute. */
  const refuseOverLimit = (request: FastifyRequest, reply: FastifyReply) => {
    const decision = reserveAll([
      [formsPerIp, request.ip],
      [formsPerNetwork, clientNetwork(request.ip)],
    ]);
    if (decision.allowed) return undefined;
    reply.header('retry-after', String(decision.retryAfterSeconds));
    return setHtmlSecurityHeaders(reply.code(429)).send(
      errorPage('Too many sign-in requests from your address or network. Try again in a minute.'),
    );
  };

  /**
   * Validates an authorize request. Until client and redirect URI are known good, failures are
   * shown, never redirected (RFC 6749 §4.1.2.1, RFC 9700 §4.11: no open redirect); every later
   * one is sent back to the client, which is waiting on its redirect URI.
   */
  const validate = async (params: AuthorizeParams, repeated: string[]): Promise<OAuthClient> => {
    const unsafe = repeated.find((name) => name === 'client_id' || name === 'redirect_uri');
    if (unsafe) throw new AuthorizeError(`The parameter ${unsafe} must be given once.`);
    const client = await findClient(params.client_id ?? '');
    if (!client?.grantTypes.includes('authorization_code')) {
      throw new AuthorizeError(
        'Unknown client or the client may not use the authorization code flow.',
      );
    }
    const redirectUri = params.redirect_uri ?? '';
    // A metadata document's redirect URIs match exactly (draft-ietf-oauth-client-id-metadata-
    // document §4.2); a registered client's loopback ones on any port too (RFC 8252 §7.3).
    const allowed =
      client.documentHost === undefined
        ? client.redirectUris.length > 0 && isRedirectUriAllowed(client.redirectUris, redirectUri)
        : client.redirectUris.includes(redirectUri);
    if (!allowed) {
      throw new AuthorizeError('The redirect_uri is not registered for this client.');
    }
    const once = repeated.filter((name) => name !== 'resource');
    if (once.length) {
      throw new AuthorizeError(`The parameter ${once[0]} must be given once.`, 'invalid_request');
    }
    if (params.response_type !== 'code') {
      throw new AuthorizeError('response_type must be code.', 'unsupported_response_type');
    }
    if (!params.code_challenge) {
      throw new AuthorizeError('code_challenge is required (PKCE).', 'invalid_request');
    }
    if (params.code_challenge_method !== 'S256') {
      throw new AuthorizeError('code_challenge_method must be S256.', 'invalid_request');
    }
    if (repeated.includes('resource')) {
      throw new AuthorizeError('Only one resource may be requested', 'invalid_target');
    }
    if (params.resource !== undefined) {
      try {
        resolveResource(resources, client, [params.resource], 'user');
      } catch (error) {
        if (error instanceof OAuthError) throw new AuthorizeError(error.description, error.code);
        throw error;
      }
    }
    return client;
  };

  /** The client; a metadata document that cannot be used is shown with its reason. */
  const findClient = async (clientId: string): Promise<OAuthClient | undefined> => {
    try {
      return await clients.find(clientId);
    } catch (error) {
      if (error instanceof OAuthError) {
        throw new AuthorizeError(`${error.code}: ${error.description}`);
      }
      throw error;
    }
  };

  /** Renders the login form, opening the transaction its CSRF token names. */
  const showLogin = (
    reply: FastifyReply,
    client: OAuthClient,
    params: AuthorizeParams,
    status = 200,
    error?: string,
    userName?: string,
  ) => {
    const csrf = transactions.open(params, clientNetwork(reply.request.ip));
    const secure = options.secureCookies ? '; Secure' : '';
    reply.header(
      'set-cookie',
      `${CSRF_COOKIE}=${csrf}; Path=/oauth2/authorize; HttpOnly; SameSite=Strict${secure}`,
    );
    return setHtmlSecurityHeaders(reply.code(status)).send(
      loginPage({
        action: '/oauth2/authorize',
        params,
        csrf,
        clientName: client.name,
        documentHost: client.documentHost,
        scopes: splitScope(params.scope),
        redirectHost: redirectUriHost(params.redirect_uri!),
        ...(error ? { error } : {}),
        ...(userName ? { userName } : {}),
      }),
    );
  };

  /** Sends the browser back to the client with `values` (RFC 6749 §4.1.2, RFC 9207 `iss`). */
  const redirectToClient = (
    reply: FastifyReply,
    params: AuthorizeParams,
    values: Record<string, string>,
  ) => {
    const target = new URL(params.redirect_uri!);
    for (const [name, value] of Object.entries(values)) target.searchParams.set(name, value);
    if (params.state !== undefined) target.searchParams.set('state', params.state);
    target.searchParams.set('iss', tokens.issuer);
    return reply.header('cache-control', 'no-store').redirect(target.toString(), 302);
  };

  /**
   * Errors found before client and redirect URI are known good are shown, never redirected
   * (open redirects); later ones go back to the client (RFC 6749 §4.1.2.1).
   */
  const fail = (reply: FastifyReply, params: AuthorizeParams, error: AuthorizeError) => {
    if (!error.redirectError) {
      return setHtmlSecurityHeaders(reply.code(400)).send(errorPage(error.message));
    }
    return redirectToClient(reply, params, {
      error: error.redirectError,
      error_description: error.message,
    });
  };

  /** The validated client; undefined when the request was refused (and answered). */
  const admit = async (
    reply: FastifyReply,
    params: AuthorizeParams,
    repeated: string[],
  ): Promise<OAuthClient | undefined> => {
    try {
      return await validate(params, repeated);
    } catch (error) {
      if (!(error instanceof AuthorizeError)) throw error;
      fail(reply, params, error);
      return undefined;
    }
  };

  return { refuseOverLimit, admit, showLogin, redirectToClient };
}
