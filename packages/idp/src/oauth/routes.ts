import { createHash } from 'node:crypto';
import {
  constantTimeEqual,
  FixedWindowThrottle,
  isRedirectUriAllowed,
  oauthError,
  reserveAll,
  setHtmlSecurityHeaders,
} from '@mcp-identity/common';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Application, AppStore } from '../apps.js';
import type { KeyStore } from '../keys.js';
import { type ApiResource, type ApiResourceStore, mayReceive } from '../resources.js';
import type { RoleStore } from '../scim/roles.js';
import type { UserStore } from '../scim/users.js';
import { currentUserScopes, isActiveUser } from '../subjects.js';
import type { TokenService } from '../tokens.js';
import type { GrantStore } from './grants.js';
import { errorPage, loginPage } from './login-page.js';
import { MAX_REGISTRATION_BYTES, readClientMetadata } from './registration.js';
import type { LoginTransactions } from './transactions.js';

export type OAuthRouteOptions = {
  apps: AppStore;
  tokens: TokenService;
  grants: GrantStore;
  transactions: LoginTransactions;
  keys: KeyStore;
  users: UserStore;
  roles: RoleStore;
  resources: ApiResourceStore;
  /** Public base URL, e.g. https://localhost:9443. */
  baseUrl: () => string;
  knownScopes: readonly string[];
  secureCookies: boolean;
  limits: OAuthLimits;
  /** Milliseconds since the epoch (throttle windows). */
  clock: () => number;
};

/** Abuse limits of the OAuth endpoints; every one refuses before the work it protects. */
export type OAuthLimits = {
  /** Dynamic client registrations per client IP per hour; 429 beyond. */
  registrationsPerIpPerHour: number;
  /** Dynamically registered clients kept at most; registration answers 503 beyond. */
  maxDynamicClients: number;
  /** Sign-in attempts per user name per window (successful ones are given back); 429 beyond. */
  loginAttemptsPerAccount: number;
  /** Sign-in attempts per client IP per window (successful ones are given back); 429 beyond. */
  loginAttemptsPerIp: number;
  loginWindowSeconds: number;
  /** Authorize requests (GET and POST) per client IP per minute; 429 beyond. */
  authorizeRequestsPerIpPerMinute: number;
};

export const DEFAULT_OAUTH_LIMITS: OAuthLimits = {
  registrationsPerIpPerHour: 20,
  maxDynamicClients: 10_000,
  loginAttemptsPerAccount: 10,
  loginAttemptsPerIp: 100,
  loginWindowSeconds: 15 * 60,
  authorizeRequestsPerIpPerMinute: 120,
};

class OAuthFailure extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly description: string,
    readonly basicChallenge = false,
  ) {
    super(description);
  }
}

const CSRF_COOKIE = 'idp_csrf';
/** A login form post carries a few short fields; this bounds what a transaction row can hold. */
const MAX_LOGIN_FORM_BYTES = 16_384;
const AUTHORIZE_PARAMS = [
  'client_id',
  'redirect_uri',
  'response_type',
  'code_challenge',
  'code_challenge_method',
  'state',
  'scope',
  'resource',
] as const;

/** The OAuth 2.0 endpoints under /oauth2 plus RFC 8414 metadata. */
export async function oauthRoutes(app: FastifyInstance, options: OAuthRouteOptions): Promise<void> {
  const {
    apps,
    tokens,
    grants,
    keys,
    users,
    roles,
    resources,
    baseUrl,
    transactions,
    limits,
    clock,
  } = options;

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof OAuthFailure) {
      if (error.basicChallenge) reply.header('www-authenticate', 'Basic realm="oauth2"');
      return oauthError(reply, error.status, error.error, error.description);
    }
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      // RFC 7591 §3.2.2 answers every unacceptable registration with a 400 and its code.
      return request.routeOptions.url === '/oauth2/register'
        ? oauthError(
            reply,
            400,
            'invalid_client_metadata',
            `The registration request is larger than ${MAX_REGISTRATION_BYTES} bytes`,
          )
        : oauthError(reply, 413, 'invalid_request', 'Request body too large');
    }
    request.log.error({ err: error }, 'OAuth request failed');
    return oauthError(reply, 500, 'server_error', 'Internal server error');
  });

  const metadata = () => {
    const base = baseUrl();
    return {
      issuer: tokens.issuer,
      authorization_endpoint: `${base}/oauth2/authorize`,
      token_endpoint: `${base}/oauth2/token`,
      jwks_uri: `${base}/oauth2/jwks`,
      registration_endpoint: `${base}/oauth2/register`,
      revocation_endpoint: `${base}/oauth2/revoke`,
      introspection_endpoint: `${base}/oauth2/introspect`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token', 'client_credentials'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
      revocation_endpoint_auth_methods_supported: [
        'client_secret_basic',
        'client_secret_post',
        'none',
      ],
      introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      code_challenge_methods_supported: ['S256'],
      scopes_supported: options.knownScopes,
    };
  };
  app.get('/.well-known/oauth-authorization-server/oauth2/token', async () => metadata());
  app.get('/.well-known/oauth-authorization-server', async () => metadata());
  app.get('/oauth2/jwks', async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=60').send({ keys: keys.publishedKeys() }),
  );

  app.post('/oauth2/token', async (request, reply) => {
    const form = readForm(request);
    const grantType = form.get('grant_type');
    const client = await authenticateClient(request, form, apps);
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
      case null:
        throw new OAuthFailure(400, 'invalid_request', 'Missing grant_type parameter');
      default:
        throw new OAuthFailure(400, 'unsupported_grant_type', 'Unsupported grant type');
    }
    return reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(response);
  });

  const requireGrant = (
    client: Application,
    grant: 'client_credentials' | 'authorization_code' | 'refresh_token',
  ) => {
    if (!client.grantTypes.includes(grant)) {
      throw new OAuthFailure(
        400,
        'unauthorized_client',
        `The client is not allowed the ${grant} grant`,
      );
    }
  };

  const clientCredentials = async (client: Application, form: URLSearchParams) => {
    requireGrant(client, 'client_credentials');
    if (!client.confidential) {
      throw new OAuthFailure(
        400,
        'unauthorized_client',
        'Public clients cannot use client_credentials',
      );
    }
    const resource = resolveResource(client, form.getAll('resource'), 'client_credentials');
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

  /**
   * RFC 8707: the API resource a request names, when the client may receive it; unknown or
   * unavailable resources are `invalid_target`. One resource per request.
   */
  const resolveResource = (
    client: Application,
    identifiers: readonly string[],
    flow: 'user' | 'client_credentials',
  ): ApiResource | undefined => {
    if (identifiers.length === 0) return undefined;
    if (identifiers.length > 1) {
      throw new OAuthFailure(400, 'invalid_target', 'Only one resource may be requested');
    }
    const resource = resources.get(identifiers[0]!);
    if (!resource || !mayReceive(resource, client, flow)) {
      throw new OAuthFailure(
        400,
        'invalid_target',
        'The resource is unknown or not available to this client',
      );
    }
    return resource;
  };

  /**
   * What the user may have now: requested ∩ the client's scopes ∩ the user's current roles
   * (∩ the scopes the resource offers, when the token is for one).
   */
  const narrowToUser = (
    client: Application,
    userId: string,
    requested: readonly string[],
    resource: ApiResource | undefined,
  ) => {
    const allowed = currentUserScopes(roles, userId);
    const offered = resource ? new Set(resource.scopes) : undefined;
    return intersect(requested, client.scopes).filter(
      (s) => allowed.has(s) && (!offered || offered.has(s)),
    );
  };

  /** The resource of a token request: the one the grant was for, or one it may add. */
  const grantResource = (
    client: Application,
    form: URLSearchParams,
    bound: string | undefined,
  ): ApiResource | undefined => {
    const asked = form.getAll('resource');
    if (bound === undefined) return resolveResource(client, asked, 'user');
    if (asked.length > 0 && (asked.length > 1 || asked[0] !== bound)) {
      throw new OAuthFailure(400, 'invalid_target', 'The resource differs from the authorized one');
    }
    return resolveResource(client, [bound], 'user');
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
      throw new OAuthFailure(400, 'invalid_grant', 'The authorization code is invalid or expired');
    }
    const code = redemption.grant;
    if (code.clientId !== client.clientId || code.redirectUri !== form.get('redirect_uri')) {
      throw new OAuthFailure(
        400,
        'invalid_grant',
        'The authorization code does not match the request',
      );
    }
    const verifier = form.get('code_verifier') ?? '';
    const challenge = createHash('sha256').update(verifier, 'ascii').digest('base64url');
    if (!verifier || !constantTimeEqual(challenge, code.codeChallenge)) {
      throw new OAuthFailure(400, 'invalid_grant', 'PKCE verification failed');
    }
    if (!isActiveUser(users, code.userId)) {
      throw new OAuthFailure(400, 'invalid_grant', 'The user is no longer active');
    }
    const resource = grantResource(client, form, code.resource);
    const scopes = narrowToUser(client, code.userId, splitScope(code.scope), resource);
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
      throw new OAuthFailure(400, 'invalid_grant', 'The refresh token is invalid or expired');
    }
    if (grant.clientId !== client.clientId) {
      throw new OAuthFailure(400, 'invalid_grant', 'The refresh token is invalid or expired');
    }
    if (!isActiveUser(users, grant.userId)) {
      grants.revokeFamily(grant.familyId);
      throw new OAuthFailure(400, 'invalid_grant', 'The user is no longer active');
    }
    const requested = form.get('scope');
    const granted = splitScope(grant.scope);
    const asked = requested === null ? granted : splitScope(requested);
    if (!asked.every((s) => granted.includes(s))) {
      throw new OAuthFailure(400, 'invalid_scope', 'The requested scope exceeds the granted scope');
    }
    const resource = grantResource(client, form, grant.resource);
    const scopes = narrowToUser(client, grant.userId, asked, resource);
    if (grants.rotateRefreshToken(presented).outcome !== 'rotated') {
      throw new OAuthFailure(400, 'invalid_grant', 'The refresh token is invalid or expired');
    }
    return userTokens(client, grant.userId, scopes, grant.familyId, resource);
  };

  app.post('/oauth2/revoke', async (request, reply) => {
    const form = readForm(request);
    const client = await authenticateClient(request, form, apps);
    const token = form.get('token');
    if (!token) throw new OAuthFailure(400, 'invalid_request', 'Missing token parameter');
    const claims = await tokens.verify(token);
    if (claims && claims.client_id === client.clientId) tokens.revoke(claims);
    else grants.revokeRefreshToken(token, client.clientId);
    return reply.header('cache-control', 'no-store').send();
  });

  app.post('/oauth2/introspect', async (request, reply) => {
    const form = readForm(request);
    const client = await authenticateClient(request, form, apps);
    if (!client.confidential) {
      throw new OAuthFailure(401, 'invalid_client', 'Introspection requires client authentication');
    }
    const token = form.get('token');
    if (!token) throw new OAuthFailure(400, 'invalid_request', 'Missing token parameter');
    reply.header('cache-control', 'no-store');
    const claims = await tokens.verify(token);
    if (claims) return { active: true, token_type: 'Bearer', ...claims };
    const refreshGrant = grants.findRefreshToken(token);
    if (refreshGrant) {
      return {
        active: true,
        token_type: 'refresh_token',
        client_id: refreshGrant.clientId,
        sub: refreshGrant.userId,
        scope: refreshGrant.scope,
        exp: refreshGrant.expiresAt,
      };
    }
    return { active: false };
  });

  const registrationsPerIp = new FixedWindowThrottle({
    limit: limits.registrationsPerIpPerHour,
    windowMs: 3_600_000,
    clock,
  });
  app.post('/oauth2/register', { bodyLimit: MAX_REGISTRATION_BYTES }, async (request, reply) => {
    // Counted before any work, so parallel requests cannot all slip under the limit.
    const decision = registrationsPerIp.reserve(request.ip);
    if (!decision.allowed) {
      reply.header('retry-after', String(decision.retryAfterSeconds));
      return oauthError(
        reply,
        429,
        'too_many_requests',
        'Too many client registrations from this address; try again later.',
      );
    }
    const read = readClientMetadata(readRegistration(request));
    if (!read.ok) return oauthError(reply, 400, read.problem.error, read.problem.description);
    if (apps.countDynamic() >= limits.maxDynamicClients) {
      return oauthError(
        reply,
        503,
        'temporarily_unavailable',
        'The server holds too many registered clients; try again later.',
      );
    }
    const { metadata } = read;
    const requested =
      metadata.scope === undefined ? options.knownScopes : splitScope(metadata.scope);
    const { app: registered } = await apps.create({
      name: metadata.name,
      public: true,
      dynamic: true,
      grantTypes: ['authorization_code', 'refresh_token'],
      scopes: intersect(requested, options.knownScopes),
      redirectUris: metadata.redirectUris,
    });
    return reply
      .code(201)
      .header('cache-control', 'no-store')
      .send({
        client_id: registered.clientId,
        client_id_issued_at: registered.createdAt,
        client_name: registered.name,
        token_endpoint_auth_method: 'none',
        grant_types: registered.grantTypes,
        response_types: ['code'],
        redirect_uris: registered.redirectUris,
        scope: registered.scopes.join(' '),
      });
  });

  /** Validates an authorize request; failures are shown, never redirected (open redirects). */
  const validateAuthorize = (params: Record<string, string>, repeated: string[]): Application => {
    const once = repeated.filter((name) => name !== 'resource');
    if (once.length) throw new AuthorizeError(`The parameter ${once[0]} must be given once.`);
    const client = apps.get(params.client_id ?? '');
    if (!client?.grantTypes.includes('authorization_code')) {
      throw new AuthorizeError(
        'Unknown client or the client may not use the authorization code flow.',
      );
    }
    const redirectUri = params.redirect_uri ?? '';
    if (
      client.redirectUris.length === 0 ||
      !isRedirectUriAllowed(client.redirectUris, redirectUri)
    ) {
      throw new AuthorizeError('The redirect_uri is not registered for this client.');
    }
    if (params.response_type !== 'code') throw new AuthorizeError('response_type must be code.');
    if (!params.code_challenge) throw new AuthorizeError('code_challenge is required (PKCE).');
    if (params.code_challenge_method !== 'S256') {
      throw new AuthorizeError('code_challenge_method must be S256.');
    }
    if (repeated.includes('resource')) {
      throw new AuthorizeError('Only one resource may be requested', 'invalid_target');
    }
    if (params.resource !== undefined) {
      try {
        resolveResource(client, [params.resource], 'user');
      } catch (error) {
        if (error instanceof OAuthFailure) throw new AuthorizeError(error.description, error.error);
        throw error;
      }
    }
    return client;
  };

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
  const formsPerIp = new FixedWindowThrottle({
    limit: limits.authorizeRequestsPerIpPerMinute,
    windowMs: 60_000,
    clock,
  });

  const showLogin = (
    reply: FastifyReply,
    client: Application,
    params: Record<string, string>,
    status = 200,
    error?: string,
    userName?: string,
  ) => {
    const csrf = transactions.open(params);
    if (!csrf) {
      return setHtmlSecurityHeaders(reply.code(503)).send(
        errorPage('Too many sign-ins are in progress. Try again later.'),
      );
    }
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
        ...(error ? { error } : {}),
        ...(userName ? { userName } : {}),
      }),
    );
  };

  /**
   * Errors found before client and redirect URI are known good are shown, never redirected
   * (open redirects); later ones go back to the client (RFC 6749 §4.1.2.1).
   */
  const authorizeFailure = (
    reply: FastifyReply,
    params: Record<string, string>,
    error: AuthorizeError,
  ) => {
    if (!error.error) return setHtmlSecurityHeaders(reply.code(400)).send(errorPage(error.message));
    const target = new URL(params.redirect_uri!);
    target.searchParams.set('error', error.error);
    target.searchParams.set('error_description', error.message);
    if (params.state !== undefined) target.searchParams.set('state', params.state);
    target.searchParams.set('iss', tokens.issuer);
    return reply.header('cache-control', 'no-store').redirect(target.toString(), 302);
  };

  app.get('/oauth2/authorize', async (request, reply) => {
    // Each rendered form holds a transaction: one address cannot fill the table.
    const decision = formsPerIp.reserve(request.ip);
    if (!decision.allowed) {
      reply.header('retry-after', String(decision.retryAfterSeconds));
      return setHtmlSecurityHeaders(reply.code(429)).send(
        errorPage('Too many sign-in requests from your address. Try again in a minute.'),
      );
    }
    const { params, repeated } = pickAuthorizeParams(request.query as Record<string, unknown>);
    try {
      return showLogin(reply, validateAuthorize(params, repeated), params);
    } catch (error) {
      if (error instanceof AuthorizeError) return authorizeFailure(reply, params, error);
      throw error;
    }
  });

  app.post('/oauth2/authorize', { bodyLimit: MAX_LOGIN_FORM_BYTES }, async (request, reply) => {
    // Every refused form renders a new one (a transaction row): bounded per address too.
    const formDecision = formsPerIp.reserve(request.ip);
    if (!formDecision.allowed) {
      reply.header('retry-after', String(formDecision.retryAfterSeconds));
      return setHtmlSecurityHeaders(reply.code(429)).send(
        errorPage('Too many sign-in requests from your address. Try again in a minute.'),
      );
    }
    const form = readForm(request);
    const { params, repeated } = pickAuthorizeParams(formFields(form));
    let client: Application;
    try {
      client = validateAuthorize(params, repeated);
    } catch (error) {
      if (error instanceof AuthorizeError) return authorizeFailure(reply, params, error);
      throw error;
    }
    // The token must be this browser's (cookie) and name a live, unused transaction made for
    // exactly these parameters; it is spent either way.
    const cookie = readCookie(request, CSRF_COOKIE);
    const csrf = form.get('csrf_token') ?? '';
    const live = csrf !== '' && transactions.consume(csrf, params);
    if (!live || !cookie || !constantTimeEqual(cookie, csrf)) {
      return showLogin(reply, client, params, 400, 'Your session expired. Please sign in again.');
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
      return showLogin(
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
      return showLogin(
        reply,
        client,
        params,
        401,
        'Login failed. Check your username and password.',
        userName,
      );
    }
    const resource = resolveResource(client, params.resource ? [params.resource] : [], 'user');
    const scope = narrowToUser(client, userId, splitScope(params.scope ?? ''), resource).join(' ');
    const code = grants.issueCode({
      clientId: client.clientId,
      userId,
      redirectUri: params.redirect_uri!,
      codeChallenge: params.code_challenge!,
      scope,
      ...(resource ? { resource: resource.identifier } : {}),
    });
    const target = new URL(params.redirect_uri!);
    target.searchParams.set('code', code);
    if (params.state !== undefined) target.searchParams.set('state', params.state);
    target.searchParams.set('iss', tokens.issuer);
    return reply.header('cache-control', 'no-store').redirect(target.toString(), 302);
  });
}

/** An authorize request that cannot go on; with an `error` code, the client is told by redirect. */
class AuthorizeError extends Error {
  constructor(
    message: string,
    readonly error?: string,
  ) {
    super(message);
  }
}

/**
 * The authorize parameters, each given at most once (RFC 6749 §3.1); `repeated` names those
 * given more than once, which are left out.
 */
function pickAuthorizeParams(source: Record<string, unknown>): {
  params: Record<string, string>;
  repeated: string[];
} {
  const params: Record<string, string> = {};
  const repeated: string[] = [];
  for (const name of AUTHORIZE_PARAMS) {
    const value = source[name];
    if (typeof value === 'string') params[name] = value;
    else if (Array.isArray(value)) repeated.push(name);
  }
  return { params, repeated };
}

/** The form's fields, repeated ones as arrays (as the query string parser gives them). */
function formFields(form: URLSearchParams): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const name of new Set(form.keys())) {
    const values = form.getAll(name);
    fields[name] = values.length > 1 ? values : values[0];
  }
  return fields;
}

function readForm(request: FastifyRequest): URLSearchParams {
  const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw new OAuthFailure(
      400,
      'invalid_request',
      'The request must be application/x-www-form-urlencoded',
    );
  }
  return new URLSearchParams(typeof request.body === 'string' ? request.body : '');
}

function readRegistration(request: FastifyRequest): Record<string, unknown> {
  const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') {
    throw new OAuthFailure(400, 'invalid_client_metadata', 'The request must be application/json');
  }
  try {
    const body = JSON.parse(typeof request.body === 'string' ? request.body : '') as unknown;
    if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
      return body as Record<string, unknown>;
    }
  } catch {
    // answered below
  }
  throw new OAuthFailure(400, 'invalid_client_metadata', 'The request body must be a JSON object');
}

/** HTTP Basic (RFC 6749 §2.3.1, form-encoded parts) or client_secret_post, or a public client id. */
async function authenticateClient(
  request: FastifyRequest,
  form: URLSearchParams,
  apps: AppStore,
): Promise<Application> {
  const header = request.headers.authorization;
  const basic = header ? /^Basic\s+(\S+)$/i.exec(header)?.[1] : undefined;
  if (header && !basic) {
    throw new OAuthFailure(401, 'invalid_client', 'Unsupported client authentication', true);
  }
  if (basic && form.has('client_secret')) {
    throw new OAuthFailure(400, 'invalid_request', 'Use only one client authentication method');
  }
  let clientId: string | null;
  let secret: string | null;
  if (basic) {
    const decoded = Buffer.from(basic, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0)
      throw new OAuthFailure(401, 'invalid_client', 'Client authentication failed', true);
    try {
      clientId = decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' '));
      secret = decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' '));
    } catch {
      throw new OAuthFailure(401, 'invalid_client', 'Client authentication failed', true);
    }
  } else {
    clientId = form.get('client_id');
    secret = form.get('client_secret');
  }
  if (!clientId)
    throw new OAuthFailure(401, 'invalid_client', 'Client authentication failed', !!basic);
  const app = apps.get(clientId);
  if (app && !app.confidential && secret === null) return app;
  const authenticated = secret === null ? undefined : await apps.authenticate(clientId, secret);
  if (!authenticated) {
    throw new OAuthFailure(401, 'invalid_client', 'Client authentication failed', !!basic);
  }
  return authenticated;
}

function splitScope(scope: string | null | undefined): string[] {
  return [...new Set((scope ?? '').split(' ').filter(Boolean))];
}

function intersect(requested: readonly string[], allowed: readonly string[]): string[] {
  const set = new Set(allowed);
  return requested.filter((s) => set.has(s));
}

function readCookie(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie ?? '';
  for (const part of header.split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) return rest.join('=');
  }
  return undefined;
}
