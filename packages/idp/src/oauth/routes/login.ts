import { constantTimeEqual, FixedWindowThrottle, reserveAll } from '@mcp-identity/common';
import type { FastifyInstance } from 'fastify';
import { WithheldScopes } from '../withheld-scopes.js';
import { type AuthorizeFlow, CSRF_COOKIE, pickAuthorizeParams } from './authorize-flow.js';
import type { OAuthRouteOptions } from './options.js';
import { formFields, readCookie, readForm } from './request.js';
import {
  deniedStepUp,
  grantableToClient,
  narrowToUser,
  resolveResource,
  splitScope,
} from './scopes.js';

/** A login form post carries a few short fields; this bounds what a transaction row can hold. */
const MAX_LOGIN_FORM_BYTES = 16_384;

/**
 * The login form's post: checks the form's CSRF token and the password, then redirects to the
 * client with an authorization code (RFC 6749 §4.1.2).
 */
export function registerLoginRoute(
  app: FastifyInstance,
  options: OAuthRouteOptions,
  flow: AuthorizeFlow,
): void {
  const { users, roles, resources, grants, transactions, limits, clock } = options;
  const loginWindowMs = limits.loginWindowSeconds * 1000;
  const loginsPerAccount = new FixedWindowThrottle({
    limit: limits.loginAttemptsPerAccount,
    windowMs: loginWindowMs,
    clock,
  });
  const loginsPerIp = new FixedWindowThrottle({
    limit: limits.loginAttemptsPerIp,
    windowMs: loginWindowMs,
    clock,
  });
  const withheldScopes = new WithheldScopes(clock);

  app.post('/oauth2/authorize', { bodyLimit: MAX_LOGIN_FORM_BYTES }, async (request, reply) => {
    // Every refused form renders a new one (a transaction row): bounded per address too.
    const limited = flow.refuseOverLimit(request, reply);
    if (limited) return limited;
    const form = readForm(request);
    const { params, repeated } = pickAuthorizeParams(formFields(form));
    const client = await flow.admit(reply, params, repeated);
    if (!client) return reply;
    // The token must be this browser's (cookie) and name a live, unused transaction made for
    // exactly these parameters; it is spent either way.
    const cookie = readCookie(request, CSRF_COOKIE);
    const csrf = form.get('csrf_token') ?? '';
    const live = csrf !== '' && transactions.consume(csrf, params);
    if (!live || !cookie || !constantTimeEqual(cookie, csrf)) {
      return flow.showLogin(
        reply,
        client,
        params,
        400,
        'Your session expired. Please sign in again.',
      );
    }
    const userName = form.get('username') ?? '';
    // Reserved before the password is checked, so concurrent guesses are counted too; a
    // successful sign-in gives its attempt back.
    const attempt: [FixedWindowThrottle, string][] = [
      [loginsPerAccount, userName.toLowerCase()],
      [loginsPerIp, request.ip],
    ];
    const decision = reserveAll(attempt);
    if (!decision.allowed) {
      reply.header('retry-after', String(decision.retryAfterSeconds));
      return flow.showLogin(
        reply,
        client,
        params,
        429,
        'Too many failed sign-in attempts. Wait a few minutes and try again.',
        userName,
      );
    }
    const userId = await users.verifyPassword(userName, form.get('password') ?? '');
    if (userId) for (const [throttle, key] of attempt) throttle.release(key);
    if (!userId) {
      return flow.showLogin(
        reply,
        client,
        params,
        401,
        'Login failed. Check your username and password.',
        userName,
      );
    }
    const resource = resolveResource(
      resources,
      client,
      params.resource ? [params.resource] : [],
      'user',
    );
    const requested = splitScope(params.scope ?? '');
    const scope = narrowToUser(roles, client, userId, requested, resource);
    const grantable = grantableToClient(client, requested, resource);
    const denied =
      deniedStepUp(grantable, scope) ??
      withheldScopes.refusal(
        { clientId: client.clientId, userId, resource: resource?.identifier },
        requested,
        grantable,
        scope,
      );
    if (denied) {
      return flow.redirectToClient(reply, params, {
        error: 'access_denied',
        error_description: `Your role does not grant ${denied.length === 1 ? 'the scope' : 'the scopes'} ${denied.join(' ')}; ask your administrator for it.`,
      });
    }
    const code = grants.issueCode({
      clientId: client.clientId,
      userId,
      redirectUri: params.redirect_uri!,
      codeChallenge: params.code_challenge!,
      scope: scope.join(' '),
      ...(resource ? { resource: resource.identifier } : {}),
    });
    return flow.redirectToClient(reply, params, { code });
  });
}
