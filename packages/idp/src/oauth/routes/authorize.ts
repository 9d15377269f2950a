import type { FastifyInstance } from 'fastify';
import { type AuthorizeFlow, pickAuthorizeParams } from './authorize-flow.js';

/** RFC 6749 §4.1.1 authorization request: validated, then answered with the login form. */
export function registerAuthorizeRoute(app: FastifyInstance, flow: AuthorizeFlow): void {
  app.get('/oauth2/authorize', async (request, reply) => {
    const limited = flow.refuseOverLimit(request, reply);
    if (limited) return limited;
    const { params, repeated } = pickAuthorizeParams(request.query as Record<string, unknown>);
    const client = await flow.admit(reply, params, repeated);
    return client ? flow.showLogin(reply, client, params) : reply;
  });
}
