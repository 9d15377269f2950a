import type { RoleStore } from '../scim/roles.js';
import type { UserStore } from '../scim/users.js';

/** Every signed-in user may use their own account (`/scim2/Me`). */
export const LOGIN_SCOPE = 'internal_login';

/** A user who may sign in and use their tokens: exists and is not disabled. */
export function isActiveUser(users: UserStore, userId: string): boolean {
  const row = users.getRow('user', userId);
  return row !== undefined && row.active !== false;
}

/** The scopes a user's roles grant right now (directly or through groups), plus `internal_login`. */
export function currentUserScopes(roles: RoleStore, userId: string): Set<string> {
  return new Set([...roles.permissionsOfUser(userId), LOGIN_SCOPE]);
}
