import { isJsonObject } from '@mcp-identity/common';
import { forbidden } from './errors.js';
import type { PatchOperation } from './patch.js';
import type { RoleRecord, RoleStore } from './roles.js';
import { ROLE_MANAGEMENT_SCOPES } from './scopes.js';
import type { Access } from './service.js';

/**
 * Least privilege for delegation: a caller may hand out only permissions it holds itself (a
 * user: through their roles; an application: its authorized scopes), unless its token carries
 * the role-management scope of the change (creating a role, or changing one). Applies to every
 * way of granting — a role's permissions, users and groups (HTTP or Bulk, where operation
 * scopes alone let the request in), and members of a group that carries roles.
 */
export function assertMayGrant(
  access: Access,
  permissions: Iterable<string>,
  change: keyof typeof ROLE_MANAGEMENT_SCOPES,
): void {
  if (access.scopes.has(ROLE_MANAGEMENT_SCOPES[change])) return;
  for (const permission of permissions) if (!access.held.has(permission)) throw forbidden();
}

/** Permissions named in a role body (create or replace). */
export function permissionsOfRoleBody(body: unknown): string[] {
  return isJsonObject(body) ? valuesOf(body.permissions) : [];
}

/**
 * Permissions a role PATCH hands out: those it adds, plus all of the role's permissions when
 * it adds users or groups (they receive every permission the role ends up with).
 */
export function permissionsGrantedByRolePatch(
  role: RoleRecord | undefined,
  operations: readonly PatchOperation[],
): string[] {
  const added: string[] = [];
  let membersAdded = false;
  for (const { op, path, value } of operations) {
    if (op === 'remove') continue;
    const entries: [string, unknown][] = path
      ? [[path, value]]
      : isJsonObject(value)
        ? Object.entries(value)
        : [];
    for (const [name, v] of entries) {
      const target = name.trim().toLowerCase();
      if (target.startsWith('permissions')) added.push(...valuesOf(v));
      else if (target.startsWith('users') || target.startsWith('groups')) {
        membersAdded ||= valuesOf(v).length > 0;
      }
    }
  }
  return membersAdded ? [...added, ...(role?.permissions ?? [])] : added;
}

/** Whether a group write adds members (PATCH operations or a replacement body). */
export function groupWriteAddsMembers(write: readonly PatchOperation[] | unknown): boolean {
  if (!Array.isArray(write)) return isJsonObject(write) && valuesOf(write.members).length > 0;
  return (write as PatchOperation[]).some(({ op, path, value }) => {
    if (op === 'remove') return false;
    if (path) return path.trim().toLowerCase().startsWith('members');
    return isJsonObject(value) && Object.keys(value).some((k) => k.toLowerCase() === 'members');
  });
}

/** Permissions a member of the group receives through the roles assigned to the group. */
export function permissionsOfGroup(roles: RoleStore, groupId: string): string[] {
  return roles
    .list()
    .filter((role) => role.groups.some((g) => g.value === groupId))
    .flatMap((role) => role.permissions);
}

function valuesOf(entries: unknown): string[] {
  if (!Array.isArray(entries)) return [];
  return entries.map((e) => (isJsonObject(e) ? String(e.value ?? '') : String(e)));
}
