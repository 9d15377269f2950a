import {
  AUTHORIZATION_REQUEST_PARAMETERS,
  ClientIdMetadataError,
  clientNetwork,
  isClientIdMetadataUrl,
  isRedirectUriAllowed,
  isS256Challenge,
  isUtf8Body,
  type OAuthErrorCode,
  randomToken,
  redirectUriHost,
  reserveEach,
  reserveForAddress,
  sha256Base64Url,
} from '@mcp-identity/common';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type ClientDisplay, readClientDisplay } from '../client-metadata.js';
import type { ServerContext } from '../context.js';
import { singleParam } from '../context.js';
import { renderErrorPage, renderLoginPage, sendHtml } from '../html.js';
import type { LoginFailureReason } from '../options.js';
import { CODE_TTL_MS, SCOPE, TRANSACTION_TTL_MS } from '../options.js';

/** The validated authorize parameters (RFC 6749 §4.1.1, RFC 7636 §4.3). */
interface AuthorizeRequest {
  clientId: string;
  /** What the client registered or published about itself, shown on the login page. */
  display: ClientDisplay;
  /** For a Client ID Metadata Document client, the host its document came from. */
  documentHost: string | undefined;
  redirectUri: string;
  codeChallenge: string;
  state: string;
  scope: string | undefined;
  resource: string | undefined;
}

/**
 * No authorize parameter (RFC 6749 Appendix A: printable characters) and no e-mail address
 * (RFC 5321, RFC 6531) holds a control character; a NUL is moreover what some databases cannot
 * store or even compare, so such input is refused here and never reaches the host's login.
 */
const CONTROL_CHARACTER = /\p{Cc}/u;

/**
 * A refused authorize request. With `redirect`, client and redirect URI were found good, so the
 * client is told at its redirect URI (RFC 6749 §4.1.2.1); otherwise the browser must not be
 * sent anywhere (RFC 9700 §4.11) and the user gets the spec's 400 page.
 */
type Refusal = {
  ok: false;
  message: string;
  redirect?: { error: OAuthErrorCode; redirectUri: string; state: string | undefined };
};

type Validation = { ok: true; value: AuthorizeRequest } | Refusal;

const PARAMS = AUTHORIZATION_REQUEST_PARAMETERS;
type ParamName = (typeof PARAMS)[number];

function readParams(
  source: unknown,
): { ok: true; params: Partial<Record<ParamName, string>> } | { ok: false; message: string } {
  const params: Partial<Record<ParamName, string>> = {};
  for (const name of PARAMS) {
    const read = singleParam(source, name);
    if (!read.ok) return { ok: false, message: `The parameter ${name} must be given once.` };
    if (read.value !== undefined && CONTROL_CHARACTER.test(read.value)) {
      return { ok: false, message: `The parameter ${name} must not contain control characters.` };
    }
    if (read.value !== undefined) params[name] = read.value;
  }
  return { ok: true, params };
}

/** The client an authorize request names, as far as the login page and the redirect need it. */
type FoundClient =
  | {
      ok: true;
      display: ClientDisplay;
      documentHost: string | undefined;
      redirectUriAllowed: (uri: string) => boolean;
    }
  | Refusal;

/**
 * A registered, unexpired dynamic client, or a client whose `client_id` is the HTTPS URL of its
 * metadata document (draft-ietf-oauth-client-id-metadata-document), fetched and validated by
 * common's resolver; a document's redirect URIs are matched exactly (its §4.2).
 */
async function findClient(clientId: string, ctx: ServerContext): Promise<FoundClient> {
  if (ctx.clientDocuments !== undefined && isClientIdMetadataUrl(clientId)) {
    try {
      const metadata = await ctx.clientDocuments.resolve(clientId);
      return {
        ok: true,
        display: readClientDisplay(metadata.document),
        documentHost: metadata.host,
        redirectUriAllowed: (uri) => metadata.redirectUris.includes(uri),
      };
    } catch (error) {
      if (!(error instanceof ClientIdMetadataError)) throw error;
      return { ok: false, message: `invalid_client: ${error.message}` };
    }
  }
  const client = await ctx.store.getClient(clientId);
  if (client === undefined || client.expiresAt <= ctx.clock()) {
    return { ok: false, message: 'The client is not registered or its registration has expired.' };
  }
  return {
    ok: true,
    display: {
      clientName: client.clientName,
      logoUri: client.logoUri,
      clientUri: client.clientUri,
    },
    documentHost: undefined,
    redirectUriAllowed: (uri) => isRedirectUriAllowed(client.redirectUris, uri),
  };
}

/**
 * Client, redirect URI, response type and PKCE, identical for GET and POST. Until client and
 * redirect URI are known to be good nothing redirects. The parameters of the spec's authorize
 * request (system spec §2.6) keep its 400 page when they fail; a foreign `resource`, which
 * the spec does not know, goes back to the client as `invalid_target` (RFC 8707 §2).
 */
async function validateAuthorize(
  source: unknown,
  issuer: string,
  ctx: ServerContext,
): Promise<Validation> {
  const read = readParams(source);
  if (!read.ok) return read;
  const p = read.params;
  const fail = (message: string): Refusal => ({ ok: false, message });
  if (p.client_id === undefined) return fail('The client_id parameter is missing.');
  const client = await findClient(p.client_id, ctx);
  if (!client.ok) return client;
  if (p.redirect_uri === undefined) return fail('The redirect_uri parameter is missing.');
  if (!client.redirectUriAllowed(p.redirect_uri)) {
    return fail('The redirect_uri is not allowed for this client.');
  }
  if (p.response_type !== 'code') return fail('The response_type must be code.');
  if (p.code_challenge === undefined) return fail('The code_challenge parameter is missing.');
  if (p.code_challenge_method !== 'S256') return fail('The code_challenge_method must be S256.');
  if (!isS256Challenge(p.code_challenge)) {
    return fail('The code_challenge is not a Base64Url-encoded SHA-256 digest.');
  }
  if (p.state === undefined) return fail('The state parameter is missing.');
  if (p.resource !== undefined && p.resource !== `${issuer}/mcp`) {
    return {
      ok: false,
      message: `The resource must be ${issuer}/mcp.`,
      redirect: { error: 'invalid_target', redirectUri: p.redirect_uri, state: p.state },
    };
  }
  return {
    ok: true,
    value: {
      clientId: p.client_id,
      display: client.display,
      documentHost: client.documentHost,
      redirectUri: p.redirect_uri,
      codeChallenge: p.code_challenge,
      state: p.state,
      scope: p.scope,
      resource: p.resource,
    },
  };
}

/** RFC 5321's path limit; longer input cannot be an account and is not passed to the host. */
const MAX_EMAIL_LENGTH = 320;
const MAX_PASSWORD_LENGTH = 1024;

const LOGIN_MESSAGES: Record<string, string> = {
  invalid_credentials: 'The e-mail address or password is incorrect.',
  locked: 'This account is locked. Contact your administrator.',
  disabled: 'This account is disabled. Contact your administrator.',
  password_expired: 'The password of this account has expired. Change it in the application.',
};

function loginFailureMessage(reason: LoginFailureReason): string {
  return LOGIN_MESSAGES[reason] ?? 'Sign-in failed.';
}

export function registerAuthorizeRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const windowMs = ctx.limits.loginThrottleWindowSeconds * 1000;
  const accountAttempts = ctx.throttles({
    name: 'login-account',
    limit: ctx.limits.loginFailuresPerAccount,
    windowMs,
  });
  const ipAttempts = ctx.throttles({
    name: 'login-ip',
    limit: ctx.limits.loginFailuresPerIp,
    windowMs,
  });
  const perIp = ctx.throttles({
    name: 'authorize-ip',
    limit: ctx.limits.authorizeRequestsPerIpPerMinute,
    windowMs: 60_000,
  });
  const perNetwork = ctx.throttles({
    name: 'authorize-network',
    limit: ctx.limits.authorizeRequestsPerNetworkPerMinute,
    windowMs: 60_000,
  });

  const invalidRequest = (reply: FastifyReply, message: string) =>
    sendHtml(reply, 400, renderErrorPage('Invalid authorization request', message));

  /** The browser back to the client with `values`, `state` and RFC 9207's `iss`. */
  const redirectToClient = (
    reply: FastifyReply,
    redirectUri: string,
    state: string | undefined,
    issuer: string,
    values: Record<string, string>,
  ) => {
    const location = new URL(redirectUri);
    for (const [name, value] of Object.entries(values)) location.searchParams.set(name, value);
    if (state !== undefined) location.searchParams.set('state', state);
    location.searchParams.set('iss', issuer);
    // 303, never 307: the browser must not replay a credential POST to the client.
    return reply.code(303).header('cache-control', 'no-store').redirect(location.href, 303);
  };

  /** A refusal at its redirect URI when it has one (RFC 6749 §4.1.2.1), else the 400 page. */
  const refuse = (reply: FastifyReply, refusal: Refusal, issuer: string) =>
    refusal.redirect === undefined
      ? invalidRequest(reply, refusal.message)
      : redirectToClient(reply, refusal.redirect.redirectUri, refusal.redirect.state, issuer, {
          error: refusal.redirect.error,
          error_description: refusal.message,
        });

  /** Bounds unauthenticated work: authorize requests per client IP and per network. */
  async function rateLimited(
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<FastifyReply | undefined> {
    const decision = await reserveForAddress(request.ip, perIp, perNetwork);
    if (decision.allowed) return undefined;
    reply.header('retry-after', String(decision.retryAfterSeconds));
    return sendHtml(
      reply,
      429,
      renderErrorPage(
        'Too many requests',
        'Too many sign-in requests from your address. Try again in a minute.',
      ),
    );
  }

  /**
   * Renders the form with a fresh single-use CSRF token bound to a new server-side transaction.
   * Each pending form holds memory until used or expired, so the store admits it under the
   * pending-login quotas, evicting the forms of whoever holds the most rather than refusing.
   */
  async function showLoginForm(
    reply: FastifyReply,
    from: FastifyRequest,
    request: AuthorizeRequest,
    status: number,
    extra: { email?: string; error?: string } = {},
  ): Promise<FastifyReply> {
    const csrfToken = randomToken(32);
    const now = ctx.clock();
    await ctx.store.saveTransaction(
      sha256Base64Url(csrfToken),
      {
        clientId: request.clientId,
        redirectUri: request.redirectUri,
        codeChallenge: request.codeChallenge,
        state: request.state,
        expiresAt: now + TRANSACTION_TTL_MS,
      },
      {
        network: clientNetwork(from.ip),
        now,
        cap: ctx.limits.maxPendingAuthorizations,
        perNetwork: ctx.limits.pendingAuthorizationsPerNetwork,
        perClient: ctx.limits.pendingAuthorizationsPerClient,
      },
    );
    const hidden: Array<readonly [string, string]> = [
      ['client_id', request.clientId],
      ['redirect_uri', request.redirectUri],
      ['response_type', 'code'],
      ['code_challenge', request.codeChallenge],
      ['code_challenge_method', 'S256'],
      ['state', request.state],
    ];
    if (request.scope !== undefined) hidden.push(['scope', request.scope]);
    if (request.resource !== undefined) hidden.push(['resource', request.resource]);
    hidden.push(['csrf_token', csrfToken]);
    const logo = request.display.logoUri;
    return sendHtml(
      reply,
      status,
      renderLoginPage({
        applicationName: ctx.applicationName,
        clientId: request.clientId,
        ...request.display,
        documentHost: request.documentHost,
        redirectHost: redirectUriHost(request.redirectUri),
        hidden,
        ...extra,
      }),
      { imageOrigins: logo === undefined ? [] : [new URL(logo).origin] },
    );
  }

  app.get('/oauth/authorize', async (request, reply) => {
    const limited = await rateLimited(request, reply);
    if (limited !== undefined) return limited;
    const issuer = ctx.issuer(request);
    const validation = await validateAuthorize(request.query, issuer, ctx);
    if (!validation.ok) return refuse(reply, validation, issuer);
    return showLoginForm(reply, request, validation.value, 200);
  });

  /** The CSRF token must name a live transaction made for exactly these parameters. */
  async function checkTransaction(
    request: FastifyRequest,
    authorize: AuthorizeRequest,
  ): Promise<boolean> {
    const token = singleParam(request.body, 'csrf_token');
    if (!token.ok || token.value === undefined) return false;
    const txn = await ctx.store.consumeTransaction(sha256Base64Url(token.value));
    return (
      txn !== undefined &&
      txn.expiresAt > ctx.clock() &&
      txn.clientId === authorize.clientId &&
      txn.redirectUri === authorize.redirectUri &&
      txn.codeChallenge === authorize.codeChallenge &&
      txn.state === authorize.state
    );
  }

  app.post('/oauth/authorize', async (request, reply) => {
    const limited = await rateLimited(request, reply);
    if (limited !== undefined) return limited;
    if (!isUtf8Body(request.headers['content-type'])) {
      return invalidRequest(reply, 'The sign-in form must be sent in UTF-8.');
    }
    const issuer = ctx.issuer(request);
    const validation = await validateAuthorize(request.body, issuer, ctx);
    if (!validation.ok) return refuse(reply, validation, issuer);
    const authorize = validation.value;
    if (!(await checkTransaction(request, authorize))) {
      return invalidRequest(
        reply,
        'The sign-in form has expired or was already submitted. Start again from your application.',
      );
    }
    const email = singleParam(request.body, 'email');
    const password = singleParam(request.body, 'password');
    if (
      !email.ok ||
      !password.ok ||
      email.value === undefined ||
      password.value === undefined ||
      email.value.length > MAX_EMAIL_LENGTH ||
      password.value.length > MAX_PASSWORD_LENGTH
    ) {
      return showLoginForm(reply, request, authorize, 200, {
        error: 'Enter your e-mail and password.',
      });
    }
    if (CONTROL_CHARACTER.test(email.value)) {
      return showLoginForm(reply, request, authorize, 400, {
        error: 'Enter a valid e-mail address.',
      });
    }
    const account = email.value.trim().toLowerCase();
    // The attempt counts before the slow password check, so concurrent guesses cannot all be
    // evaluated; only a success or a failure of the host's own gives it back.
    const attempt = await reserveEach([
      [accountAttempts, account],
      [ipAttempts, request.ip],
    ]);
    if (!attempt.allowed) {
      reply.header('retry-after', String(attempt.retryAfterSeconds));
      return showLoginForm(reply, request, authorize, 429, {
        email: email.value,
        error: 'Too many failed sign-in attempts. Wait a few minutes and try again.',
      });
    }
    let result: Awaited<ReturnType<ServerContext['login']>>;
    try {
      result = await ctx.login({ email: email.value, password: password.value });
    } catch (error) {
      await Promise.all([accountAttempts.release(account), ipAttempts.release(request.ip)]);
      request.log.error({ err: error }, 'login hook failed');
      return showLoginForm(reply, request, authorize, 503, {
        email: email.value,
        error: 'Sign-in is temporarily unavailable. Try again later.',
      });
    }
    if (!result.ok) {
      return showLoginForm(reply, request, authorize, 200, {
        email: email.value,
        error: loginFailureMessage(result.reason),
      });
    }
    await Promise.all([
      accountAttempts.reset(account),
      ipAttempts.release(request.ip),
      // A user signed in through it: the client is no longer one a flood may push out.
      ctx.store.markClientUsed(authorize.clientId),
    ]);
    const now = ctx.clock();
    await ctx.store.pruneExpired(now);
    const code = randomToken(32);
    await ctx.store.saveCode(sha256Base64Url(code), {
      userId: result.userId,
      clientId: authorize.clientId,
      redirectUri: authorize.redirectUri,
      codeChallenge: authorize.codeChallenge,
      scope: SCOPE,
      grantId: randomToken(16),
      expiresAt: now + CODE_TTL_MS,
    });
    return redirectToClient(reply, authorize.redirectUri, authorize.state, issuer, { code });
  });
}
