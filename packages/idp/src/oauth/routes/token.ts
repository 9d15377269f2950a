import { TOKEN_EXCHANGE_GRANT, verifyS256 } from '@mcp-identity/common';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { isActiveUser } from '../../auth/subjects.js';
import type { Application } from '../../store/apps.js';
import type { ApiResource } from '../../store/resources.js';
import { authenticateClient } from './client-auth.js';
import { failure } from './failures.js';
import type { OAuthRouteOptions } from './options.js';
import { readForm } from './request.js';
import { intersect, narrowToUser, resolveResource, splitScope } from './scopes.js';
import { exchangeToken } from './token-exchange.js';

type Grant = 'client_credentials' | 'authorization_code' | 'refresh_token';

/**
 * RFC 6749 §3.2 token endpoint: client credentials, authorization code (RFC 7636), refresh, and
 * token exchange (RFC 8693, its own file).
 */
export function registerTokenRoute(app: FastifyInstance, options: OAuthRouteOptions): void {
  const { apps, clients, tokens, grants, users, roles, resources, knownScopes } = options;

  app.post('/oauth2/token', async (request, reply) => {
    const form = readForm(request);
    const grantType = form.get('grant_type');
    const client = await authenticateClient(request, form, clients);
    let response: Record<string, unknown>;
    switch (grantType) {
      case 'client_credentials':
        response = await clientCredentials(client, form);
        break;
      case 'authorization_code':
        response = await authorizationCode(request, client, form);
        break;
      case 'refresh_token':
        response = await refresh(request, client, form);
        break;
      case TOKEN_EXCHANGE_GRANT:
        response = await exchangeToken({ tokens, roles, knownScopes }, client, form);
        break;
      case null:
        throw failure.missingGrantType();
      default:
        throw failure.unsupportedGrantType();
    }
    return reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(response);
  });

  const requireGrant = (client: Application, grant: Grant) => {
    if (!client.grantTypes.includes(grant)) {
      throw failure.grantNotAllowed(grant);
    }
  };

  const clientCredentials = async (client: Application, form: URLSearchParams) => {
    requireGrant(client, 'client_credentials');
    if (!client.confidential) {
      throw failure.publicClientCredentials();
    }
    const resource = resolveResource(
      resources,
      client,
      form.getAll('resource'),
      'client_credentials',
    );
    const scopes = intersect(
      intersect(splitScope(form.get('scope')), client.scopes),
      resource?.scopes ?? client.scopes,
    );
    const { token, expiresIn } = await tokens.issue({
      clientId: client.clientId,
      subject: client.clientId,
      scopes,
      ...(resource ? { audiences: [resource.identifier] } : {}),
    });
    return {
      access_token: token,
      token_type: 'Bearer',
      expires_in: expiresIn,
      scope: scopes.join(' '),
    };
  };

  /** The resource of a token request: the one the grant was for, or one it may add. */
  const grantResource = (
    client: Application,
    form: URLSearchParams,
    bound: string | undefined,
  ): ApiResource | undefined => {
    const asked = form.getAll('resource');
    if (bound === undefined) return resolveResource(resources, client, asked, 'user');
    if (asked.length > 0 && (asked.length > 1 || asked[0] !== bound)) {
      throw failure.resourceDiffers();
    }
    return resolveResource(resources, client, [bound], 'user');
  };

  const userTokens = async (
    client: Application,
    userId: string,
    scopes: string[],
    familyId: string,
    resource: ApiResource | undefined,
  ) => {
    const { token, expiresIn, claims } = await tokens.issue({
      clientId: client.clientId,
      subject: userId,
      scopes,
      ...(resource ? { audiences: [resource.identifier] } : {}),
    });
    grants.recordAccessToken(familyId, claims.jti, claims.exp);
    apps.markUsed(client);
    const scope = scopes.join(' ');
    const refreshToken = client.grantTypes.includes('refresh_token')
      ? grants.issueRefreshToken({
          clientId: client.clientId,
          userId,
          scope,
          familyId,
          ...(resource ? { resource: resource.identifier } : {}),
        }).token
      : undefined;
    return {
      access_token: token,
      token_type: 'Bearer',
      expires_in: expiresIn,
      scope,
      ...(refreshToken ? { refresh_token: refreshToken } : {}),
    };
  };

  const authorizationCode = async (
    request: FastifyRequest,
    client: Application,
    form: URLSearchParams,
  ) => {
    requireGrant(client, 'authorization_code');
    const redemption = grants.consumeCode(form.get('code') ?? '');
    if (redemption.outcome === 'replayed') {
      request.log.warn(
        { clientId: client.clientId },
        'authorization code replayed; the tokens issued from it are revoked',
      );
    }
    if (redemption.outcome !== 'redeemed') {
      throw failure.invalidCode();
    }
    const code = redemption.grant;
    if (code.clientId !== client.clientId || code.redirectUri !== form.get('redirect_uri')) {
      throw failure.codeMismatch();
    }
    if (!verifyS256(form.get('code_verifier') ?? '', code.codeChallenge)) {
      throw failure.pkceFailed();
    }
    if (!isActiveUser(users, code.userId)) {
      throw failure.inactiveUser();
    }
    const resource = grantResource(client, form, code.resource);
    const scopes = narrowToUser(roles, client, code.userId, splitScope(code.scope), resource);
    return userTokens(client, code.userId, scopes, code.grantId, resource);
  };

  /**
   * Rotation on every use. The token is validated first and rotated last, so a refused request
   * never burns a good token; presenting an already rotated token revokes its whole family.
   * Every refresh re-checks the user and narrows the scopes to what their roles allow now.
   */
  const refresh = async (request: FastifyRequest, client: Application, form: URLSearchParams) => {
    requireGrant(client, 'refresh_token');
    const presented = form.get('refresh_token') ?? '';
    const grant = grants.findRefreshToken(presented);
    if (!grant) {
      if (grants.rotateRefreshToken(presented).outcome === 'reused') {
        request.log.warn({ clientId: client.clientId }, 'refresh token reused; family revoked');
      }
      throw failure.invalidRefreshToken();
    }
    if (grant.clientId !== client.clientId) {
      throw failure.invalidRefreshToken();
    }
    if (!isActiveUser(users, grant.userId)) {
      grants.revokeFamily(grant.familyId);
      throw failure.inactiveUser();
    }
    const requested = form.get('scope');
    const granted = splitScope(grant.scope);
    const asked = requested === null ? granted : splitScope(requested);
    if (!asked.every((s) => granted.includes(s))) {
      throw failure.scopeExceeded();
    }
    const resource = grantResource(client, form, grant.resource);
    const scopes = narrowToUser(roles, client, grant.userId, asked, resource);
    if (grants.rotateRefreshToken(presented).outcome !== 'rotated') {
      throw failure.invalidRefreshToken();
    }
    return userTokens(client, grant.userId, scopes, grant.familyId, resource);
  };
}
