import { bearerChallenge, jsonRpcError, verifyJwt } from '@mcp-identity/common';
import type { AuthInfo } from '@modelcontextprotocol/server';
import type { preHandlerAsyncHookHandler } from 'fastify';
import { createRemoteJWKSet } from 'jose';

/**
 * Delegated calls (system spec §1.8, issue 41): the gateway in front sends, with its upstream
 * header, a token the identity provider exchanged for this server (RFC 8693); the tools exchange
 * it again for the API's tokens, so the API sees the user as `sub` and every hop as an actor.
 */
export interface DelegatedAuthOptions {
  /** The identity provider's issuer (`iss` of the tokens). */
  issuer: string;
  /** Its JWKS; default `<issuer>/oauth2/jwks` (the embedded identity provider's). */
  jwksUrl?: string;
  /** This server's own URL: the `aud` the gateway's exchanged tokens must name. */
  audience: string;
  /** The `resource` of the tokens the tools exchange for; default each API's server URL. */
  resource?: string;
}

// The identity provider signs with RS256; the others are those the gateway accepts too.
const ALGORITHMS = ['RS256', 'PS256', 'ES256'] as const;

// Not a code the MCP or JSON-RPC specifications reserve: the server-defined range (as
// required-header.ts answers).
const UNAUTHORIZED_CODE = -32001;

const BEARER = /^Bearer ([A-Za-z0-9\-._~+/]+=*)$/i;

/**
 * Refuses a `/mcp` request without a valid bearer token from the identity provider for this
 * server (RFC 6750 §3: 401 with a Bearer challenge) and hands a valid one to the tools as the
 * request's AuthInfo. The token is checked, not trusted because the gateway sent it: signature
 * by the issuer's keys, `iss`, `aud` = this server, `exp`, and a `sub` to act for.
 */
export function delegatedAuthGuard(options: DelegatedAuthOptions): preHandlerAsyncHookHandler {
  const keys = createRemoteJWKSet(
    new URL(options.jwksUrl ?? `${options.issuer.replace(/\/+$/, '')}/oauth2/jwks`),
  );
  const rules = {
    algorithms: ALGORITHMS,
    issuer: options.issuer,
    audience: options.audience,
    requiredClaims: ['exp', 'sub'],
  };
  return async (request, reply) => {
    const refuse = (description: string) => {
      request.log.warn({ reason: description }, 'refused delegated /mcp request');
      return reply
        .code(401)
        .header(
          'www-authenticate',
          bearerChallenge({ error: 'invalid_token', error_description: description }),
        )
        .send(jsonRpcError(null, UNAUTHORIZED_CODE, `Unauthorized: ${description}`));
    };
    const header = request.headers.authorization;
    const token = typeof header === 'string' ? BEARER.exec(header)?.[1] : undefined;
    if (token === undefined) {
      // RFC 6750 §3.1: a request without credentials gets a challenge without an error code.
      request.log.warn('refused delegated /mcp request without a bearer token');
      return reply
        .code(401)
        .header('www-authenticate', bearerChallenge())
        .send(jsonRpcError(null, UNAUTHORIZED_CODE, 'Unauthorized: a bearer token is required'));
    }
    const verified = await verifyJwt(token, keys, rules);
    if (!verified.ok) return refuse(verified.message);
    const { payload } = verified;
    const auth: AuthInfo = {
      token,
      clientId: typeof payload.client_id === 'string' ? payload.client_id : '',
      scopes: typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : [],
      expiresAt: payload.exp,
      extra: { sub: payload.sub },
    };
    (request.raw as typeof request.raw & { auth?: AuthInfo }).auth = auth;
  };
}
