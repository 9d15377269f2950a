import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AccessTokenClaims, ActorClaim } from '../auth/tokens.js';

/**
 * The actors of a token, outermost (the one that called) first: RFC 8693 §4.1 nests each
 * earlier actor inside the later one's `act`. Empty for a token used by its own subject.
 */
export function actorChain(claims: Pick<AccessTokenClaims, 'act'>): string[] {
  const chain: string[] = [];
  for (let act: ActorClaim | undefined = claims.act; act; act = act.act) chain.push(act.sub);
  return chain;
}

/** Requests that change the directory: creations, replacements, patches, deletions, Bulk. */
export function isScimWrite(request: FastifyRequest): boolean {
  const { method } = request;
  if (method === 'POST') return !(request.routeOptions.url ?? '').endsWith('/.search');
  return method === 'PUT' || method === 'PATCH' || method === 'DELETE';
}

/** A SCIM write as the directory records it: who (subject, client, actors) did what. */
export type ScimWrite = {
  method: string;
  /** The matched route pattern, e.g. `/scim2/Users/:id`. */
  route: string;
  status: number;
  /** The token's subject: a user id, or the application's client id; absent without a token. */
  subject?: string;
  clientId?: string;
  /** RFC 8693 actors of a delegated (exchanged) token, outermost first; empty otherwise. */
  actor: string[];
};

export function describeScimWrite(
  request: FastifyRequest,
  reply: FastifyReply,
  claims: AccessTokenClaims | undefined,
): ScimWrite {
  return {
    method: request.method,
    route: request.routeOptions.url ?? '',
    status: reply.statusCode,
    ...(claims ? { subject: claims.sub, clientId: claims.client_id } : {}),
    actor: claims ? actorChain(claims) : [],
  };
}

/** The directory's record of who acted: one line per SCIM write, never the token itself. */
export function logScimWrite(request: FastifyRequest, write: ScimWrite): void {
  request.log.info({ scimWrite: write }, 'SCIM write');
}
