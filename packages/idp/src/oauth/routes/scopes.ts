import { currentUserScopes } from '../../auth/subjects.js';
import type { RoleStore } from '../../scim/roles.js';
import type { Application } from '../../store/apps.js';
import { type ApiResource, type ApiResourceStore, mayReceive } from '../../store/resources.js';
import { failure } from './failures.js';

export function splitScope(scope: string | null | undefined): string[] {
  return [...new Set((scope ?? '').split(' ').filter(Boolean))];
}

export function intersect(requested: readonly string[], allowed: readonly string[]): string[] {
  const set = new Set(allowed);
  return requested.filter((s) => set.has(s));
}

/**
 * What the user may have now: requested ∩ the client's scopes ∩ the user's current roles
 * (∩ the scopes the resource offers, when the token is for one).
 */
export function narrowToUser(
  roles: RoleStore,
  client: Application,
  userId: string,
  requested: readonly string[],
  resource: ApiResource | undefined,
): string[] {
  const allowed = currentUserScopes(roles, userId);
  return grantableToClient(client, requested, resource).filter((s) => allowed.has(s));
}

/** What the client may be given at all: requested ∩ the client's scopes (∩ the resource's). */
export function grantableToClient(
  client: Application,
  requested: readonly string[],
  resource: ApiResource | undefined,
): string[] {
  const offered = resource ? new Set(resource.scopes) : undefined;
  return intersect(requested, client.scopes).filter((s) => !offered || offered.has(s));
}

/**
 * Step-up that ends. Scopes the user's role does not grant are normally left out of the grant,
 * the token response saying what was granted (RFC 6749 §3.3): a person with fewer permissions
 * still signs in to what they may do. But when the role grants none of the scopes asked for
 * (as after a gateway's `insufficient_scope`, whose challenge names only the missing scopes),
 * a token would carry nothing the client asked for and the client would ask again: the request
 * is refused with `access_denied` (RFC 6749 §4.1.2.1), naming the scopes. Undefined when the
 * request may go on.
 */
export function deniedStepUp(
  grantable: readonly string[],
  granted: readonly string[],
): string[] | undefined {
  return grantable.length > 0 && granted.length === 0 ? [...grantable] : undefined;
}

/**
 * RFC 8707: the API resource a request names, when the client may receive it; unknown or
 * unavailable resources are `invalid_target`. One resource per request.
 */
export function resolveResource(
  resources: ApiResourceStore,
  client: Application,
  identifiers: readonly string[],
  flow: 'user' | 'client_credentials',
): ApiResource | undefined {
  if (identifiers.length === 0) return undefined;
  if (identifiers.length > 1) {
    throw failure.oneResource();
  }
  const resource = resources.get(identifiers[0]!);
  if (!resource || !mayReceive(resource, client, flow)) {
    throw failure.unknownResource();
  }
  return resource;
}
