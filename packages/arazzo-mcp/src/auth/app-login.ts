import {
  bearerChallenge,
  bearerToken,
  type Clock,
  isUtf8Body,
  memoryThrottles,
  reserveEach,
  systemClock,
  type ThrottleFactory,
  verifyJwt,
} from '@mcp-identity/common';
import type { IssuerResolver, SigningKey } from '@mcp-identity/oauth';
import { signToken } from '@mcp-identity/oauth';
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { type Accounts, accountEmail } from './accounts.js';

export const LOGIN_PATH = '/api/auth/login';
export const ME_PATH = '/api/auth/me';

export interface AppLoginOptions {
  accounts: Accounts;
  key: SigningKey;
  issuer: IssuerResolver;
  /** Lifetime of the application's own tokens. Default 3600 s. */
  tokenTtlSeconds?: number;
  /** Failed logins per e-mail / per IP within `throttleWindowSeconds`. Defaults 5 / 20. */
  failuresPerAccount?: number;
  failuresPerIp?: number;
  throttleWindowSeconds?: number;
  /** Where the failed logins count. Default: process memory. */
  throttles?: ThrottleFactory;
  clock?: Clock;
}

/**
 * The audience of every token this server signs. A normal-login token shares the MCP tokens'
 * issuer and audience — one JWT Bearer scheme for the whole application — so the `/mcp`
 * guard authenticates it and then refuses it for lacking `mcp:tools` (403
 * `insufficient_scope`, RFC 6750 §3.1) instead of treating it as garbage (401).
 */
export const tokenAudience = (issuer: string) => `${issuer}/mcp`;

function sendError(reply: FastifyReply, status: number, error: string, message: string) {
  return reply.code(status).header('cache-control', 'no-store').send({ error, message });
}

/**
 * The credentials of a login body, validated here at the boundary: an `email` no account can
 * have (a control character, a NUL that PostgreSQL could not even compare) is refused as
 * malformed before any throttle or query. `account` is the normalized e-mail.
 */
function credentialsOf(
  body: unknown,
): { email: string; account: string; password: string } | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const email = 'email' in body ? body.email : undefined;
  const password = 'password' in body ? body.password : undefined;
  if (typeof email !== 'string' || typeof password !== 'string' || password === '') {
    return undefined;
  }
  const account = accountEmail(email);
  return account === undefined ? undefined : { email, account, password };
}

/**
 * The application's normal login, the one the OAuth login form also checks credentials
 * against: `POST /api/auth/login` with JSON `{ email, password }` answers a Bearer JWT without
 * `mcp:tools` (so it cannot call `/mcp`); `GET /api/auth/me` names the bearer. Failed logins
 * are throttled per account and per IP.
 */
export const appLoginRoutes: FastifyPluginAsync<AppLoginOptions> = async (app, options) => {
  const clock = options.clock ?? systemClock;
  const ttlSeconds = options.tokenTtlSeconds ?? 3600;
  const windowMs = (options.throttleWindowSeconds ?? 900) * 1000;
  const throttles = options.throttles ?? memoryThrottles(clock);
  const perAccount = throttles({
    name: 'app-login-account',
    limit: options.failuresPerAccount ?? 5,
    windowMs,
  });
  const perIp = throttles({ name: 'app-login-ip', limit: options.failuresPerIp ?? 20, windowMs });

  // A shared store (the throttles' Redis) that cannot be reached: refuse, never fail open.
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error.statusCode === 503) {
      request.log.warn({ err: error.message }, 'login state unavailable');
      reply.header('retry-after', '2');
      return sendError(reply, 503, 'temporarily_unavailable', 'Try again shortly.');
    }
    throw error;
  });

  app.post(LOGIN_PATH, async (request, reply) => {
    if (!isUtf8Body(request.headers['content-type'])) {
      return sendError(reply, 415, 'invalid_request', 'Send the JSON body in UTF-8.');
    }
    const credentials = credentialsOf(request.body);
    if (credentials === undefined) {
      return sendError(
        reply,
        400,
        'invalid_request',
        'Send a JSON object with the string fields "email" (an e-mail address) and "password".',
      );
    }
    const { account } = credentials;
    // The attempt counts before the slow password check, so concurrent guesses cannot all be
    // evaluated; a success gives it back.
    const attempt = await reserveEach([
      [perAccount, account],
      [perIp, request.ip],
    ]);
    if (!attempt.allowed) {
      reply.header('retry-after', String(attempt.retryAfterSeconds));
      return sendError(reply, 429, 'too_many_requests', 'Too many failed logins; try again later.');
    }
    let result: Awaited<ReturnType<Accounts['verify']>>;
    try {
      result = await options.accounts.verify(credentials.email, credentials.password);
    } catch (error) {
      // The accounts could not be read (503): the attempt was not evaluated, so it gives it back.
      await Promise.all([perAccount.release(account), perIp.release(request.ip)]).catch(
        () => undefined,
      );
      throw error;
    }
    if (!result.ok) {
      return sendError(reply, 401, 'invalid_credentials', 'Invalid e-mail or password.');
    }
    await Promise.all([perAccount.reset(account), perIp.release(request.ip)]);
    const issuer = options.issuer(request);
    const { token, expiresIn } = await signToken(options.key, {
      issuer,
      audience: tokenAudience(issuer),
      subject: result.account.id,
      ttlSeconds: ttlSeconds,
      claims: { email: result.account.email },
      clock,
    });
    return reply
      .header('cache-control', 'no-store')
      .send({ access_token: token, token_type: 'Bearer', expires_in: expiresIn });
  });

  app.get(ME_PATH, async (request, reply) => {
    const subject = await bearerSubject(request, options, clock);
    const account = subject === undefined ? undefined : await options.accounts.findById(subject);
    if (account === undefined) {
      reply.header('www-authenticate', bearerChallenge());
      return sendError(reply, 401, 'invalid_token', 'A valid Bearer token is required.');
    }
    return reply.header('cache-control', 'no-store').send({ id: account.id, email: account.email });
  });
};

/** The `sub` of a token this server signed for this issuer, or undefined. */
async function bearerSubject(
  request: FastifyRequest,
  options: AppLoginOptions,
  clock: Clock,
): Promise<string | undefined> {
  const token = bearerToken(request.headers.authorization);
  if (token === undefined) return undefined;
  const issuer = options.issuer(request);
  const verified = await verifyJwt(token, options.key.publicKey, {
    algorithms: [options.key.alg],
    issuer,
    audience: tokenAudience(issuer),
    requiredClaims: ['exp', 'sub'],
    clock,
  });
  return verified.ok ? verified.payload.sub : undefined;
}
