import {
  clientNetwork,
  isJsonObject,
  MAX_REDIRECT_URIS,
  OAuthError,
  oauthTooManyRequests,
  randomToken,
  redirectUriProblem,
  reserveForAddress,
} from '@mcp-identity/common';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { readClientDisplay } from '../client-metadata.js';
import type { ServerContext } from '../context.js';
import { CLIENT_TTL_MS } from '../options.js';

type RedirectUris = { ok: true; uris: string[] } | { ok: false; problem: string };

/** The registration body when it is a JSON object sent as JSON; otherwise an empty one. */
function readBody(request: FastifyRequest): Record<string, unknown> {
  const contentType = request.headers['content-type'] ?? '';
  if (!contentType.toLowerCase().includes('application/json')) return {};
  let body: unknown;
  try {
    body = JSON.parse(typeof request.body === 'string' ? request.body : '');
  } catch {
    return {};
  }
  return isJsonObject(body) ? body : {};
}

/**
 * `redirect_uris` counts only as an array; empty and null entries are dropped. A body that
 * is not a JSON object registers a client without redirect URIs: registration only fails on
 * a redirect URI it refuses.
 */
function readRedirectUris(body: Record<string, unknown>): RedirectUris {
  const raw = body.redirect_uris;
  if (!Array.isArray(raw)) return { ok: true, uris: [] };
  const uris: string[] = [];
  for (const entry of raw) {
    if (entry === null || entry === '') continue;
    if (typeof entry !== 'string') return { ok: false, problem: 'redirect_uris must be strings' };
    const problem = redirectUriProblem(entry);
    if (problem !== undefined) return { ok: false, problem };
    uris.push(entry);
  }
  if (uris.length > MAX_REDIRECT_URIS) {
    return { ok: false, problem: `at most ${MAX_REDIRECT_URIS} redirect URIs may be registered` };
  }
  return { ok: true, uris };
}

export async function registerRegistrationRoute(
  app: FastifyInstance,
  ctx: ServerContext,
): Promise<void> {
  const perIp = ctx.throttles({
    name: 'register-ip',
    limit: ctx.limits.registrationsPerIpPerHour,
    windowMs: 3_600_000,
  });
  const perNetwork = ctx.throttles({
    name: 'register-network',
    limit: ctx.limits.registrationsPerNetworkPerHour,
    windowMs: 3_600_000,
  });
  // Its own context: the body is read as text whatever the content type, so the
  // "only when the content type contains application/json" rule is ours to apply.
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => {
      done(null, body);
    });
    scope.post('/oauth/register', async (request, reply) => {
      const decision = await reserveForAddress(request.ip, perIp, perNetwork);
      if (!decision.allowed) {
        return oauthTooManyRequests(
          reply,
          decision.retryAfterSeconds,
          'Too many client registrations from this address; try again later.',
        );
      }
      const body = readBody(request);
      const redirectUris = readRedirectUris(body);
      if (!redirectUris.ok) {
        throw new OAuthError('invalid_redirect_uri', redirectUris.problem);
      }
      const now = ctx.clock();
      const clientId = randomToken(32);
      const display = readClientDisplay(body);
      const saved = await ctx.store.saveClient(
        {
          clientId,
          redirectUris: redirectUris.uris,
          issuedAt: now,
          expiresAt: now + CLIENT_TTL_MS,
          ...display,
        },
        { network: clientNetwork(request.ip), now, cap: ctx.limits.maxClients },
      );
      if (!saved) {
        throw new OAuthError(
          'temporarily_unavailable',
          'The server holds too many registered clients; try again later.',
        );
      }
      return reply
        .code(200)
        .header('cache-control', 'no-store')
        .send({
          client_id: clientId,
          client_id_issued_at: Math.floor(now / 1000),
          token_endpoint_auth_method: 'none',
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          redirect_uris: redirectUris.uris,
          ...(display.clientName === undefined ? {} : { client_name: display.clientName }),
          ...(display.logoUri === undefined ? {} : { logo_uri: display.logoUri }),
          ...(display.clientUri === undefined ? {} : { client_uri: display.clientUri }),
        });
    });
  });
}
