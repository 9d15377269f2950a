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
  const offered = resource ? new Set(resource.scopes) : undefined;
  return intersect(requested, client.scopes).filter(
    (s) => allowed.has(s) && (!offered || offered.has(s)),
  );
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
