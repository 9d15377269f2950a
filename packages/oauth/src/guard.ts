import {
  bearerChallenge,
  bearerToken,
  InvalidArgumentError,
  type JwtKeyResolver,
  type JwtVerificationKey,
  verifyJwt,
} from '@mcp-identity/common';
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { JWTPayload } from 'jose';
import type { Clock } from './clock.js';
import { systemClock } from './clock.js';
import { BadRequestError } from './errors.js';
import type { IssuerOptions } from './issuer.js';
import { createIssuerResolver, normalizeBasePath } from './issuer.js';
import { SCOPE } from './options.js';

export type VerificationKey = JwtVerificationKey | JwtKeyResolver;

export interface McpGuardOptions extends IssuerOptions {
  /** The access-token verification key, or a key getter such as jose's `createLocalJWKSet`. */
  key: VerificationKey;
  /** Accepted JWS algorithms, pinned (e.g. `['ES256']`); `none` is never accepted. */
  algorithms: string[];
  /** Path guarded with everything under it, relative to `basePath`. Default `/mcp`. */
  mcpPath?: string;
  clock?: Clock;
  /**
   * Whether the token's subject may still use the server (an account that was removed or
   * disabled may not). Called for every guarded request with a valid token; a refused subject
   * gets the same 401 as an invalid token, so removal takes effect before the token expires.
   */
  isSubjectActive?: (subject: string) => boolean | Promise<boolean>;
}

/** Who called `/mcp`, as proven by the access token. */
export interface McpAuth {
  token: string;
  subject: string;
  clientId: string | undefined;
  scopes: string[];
  claims: JWTPayload;
}

const authByRequest = new WeakMap<FastifyRequest, McpAuth>();

/** The verified caller of a guarded request (undefined on unguarded paths). */
export function getMcpAuth(request: FastifyRequest): McpAuth | undefined {
  return authByRequest.get(request);
}

function decodedPath(url: string): string | undefined {
  const path = url.split('?')[0] ?? '';
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

const resourceMetadataUrl = (issuer: string) => `${issuer}/.well-known/oauth-protected-resource`;

function scopesOf(claims: JWTPayload): string[] {
  return typeof claims.scope === 'string' ? claims.scope.split(' ').filter(Boolean) : [];
}

/**
 * An `onRequest` hook protecting `<basePath><mcpPath>` and everything under it: no or
 * invalid token → 401 with `Bearer realm="mcp", resource_metadata=…` (RFC 9728 §5.1); a valid
 * token without `mcp:tools` → 403 `insufficient_scope` (RFC 6750 §3.1). Other paths pass untouched.
 */
export function createMcpGuard(options: McpGuardOptions): onRequestAsyncHookHandler {
  const algorithms = options.algorithms.filter((alg) => alg.toLowerCase() !== 'none');
  if (algorithms.length === 0)
    throw new InvalidArgumentError('createMcpGuard needs a pinned algorithm');
  const issuerOf = createIssuerResolver(options);
  const guarded = `${normalizeBasePath(options.basePath)}${options.mcpPath ?? '/mcp'}`;
  const clock = options.clock ?? systemClock;
  const key = options.key;

  const verify = (token: string, issuer: string) =>
    verifyJwt(token, key, {
      algorithms,
      issuer,
      audience: `${issuer}/mcp`,
      requiredClaims: ['exp', 'sub'],
      clock,
    });

  function challenge(reply: FastifyReply, issuer: string) {
    return reply
      .code(401)
      .header(
        'www-authenticate',
        bearerChallenge({ realm: 'mcp', resource_metadata: resourceMetadataUrl(issuer) }),
      )
      .send({
        error: 'invalid_token',
        error_description: 'A valid Bearer access token with scope mcp:tools is required.',
      });
  }

  const isGuarded = (path: string | undefined) =>
    path !== undefined && (path === guarded || path.startsWith(`${guarded}/`));

  return async (request, reply) => {
    // The route that matched decides, not the raw URL: the router decodes percent-escapes,
    // so `/%6Dcp` reaches the /mcp handler while its URL does not start with /mcp.
    if (!isGuarded(request.routeOptions.url) && !isGuarded(decodedPath(request.url))) return;
    let issuer: string;
    try {
      issuer = issuerOf(request);
    } catch (error) {
      if (!(error instanceof BadRequestError)) throw error;
      return reply.code(400).send({ error: 'invalid_request', error_description: error.message });
    }
    const token = bearerToken(request.headers.authorization);
    if (token === undefined) return challenge(reply, issuer);
    const verified = await verify(token, issuer);
    if (!verified.ok) return challenge(reply, issuer);
    const claims = verified.payload;
    if (options.isSubjectActive && !(await options.isSubjectActive(claims.sub as string))) {
      return challenge(reply, issuer);
    }
    const scopes = scopesOf(claims);
    if (!scopes.includes(SCOPE)) {
      return reply
        .code(403)
        .header(
          'www-authenticate',
          bearerChallenge({
            error: 'insufficient_scope',
            scope: SCOPE,
            resource_metadata: resourceMetadataUrl(issuer),
          }),
        )
        .send({
          error: 'insufficient_scope',
          error_description: 'The token lacks scope mcp:tools.',
        });
    }
    authByRequest.set(request, {
      token,
      subject: claims.sub as string,
      clientId: typeof claims.client_id === 'string' ? claims.client_id : undefined,
      scopes,
      claims,
    });
  };
}
