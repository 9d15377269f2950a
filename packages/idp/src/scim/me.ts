import { isJsonObject, type JsonObject } from '@mcp-identity/common';
import { ScimError } from './errors.js';
import type { PatchOperation } from './patch.js';

const CORE_URN = 'urn:ietf:params:scim:schemas:core:2.0:user';

/**
 * What a user may change about themselves through /scim2/Me: their profile and password.
 * Everything else — `active`, roles, groups, `userType`, `entitlements`, the enterprise, custom
 * and WSO2 extensions — is administrative, and read-only here (RFC 7643 §7 `readOnly`).
 */
const SELF_SERVICE = new Set([
  'name',
  'displayname',
  'nickname',
  'profileurl',
  'emails',
  'phonenumbers',
  'ims',
  'photos',
  'addresses',
  'preferredlanguage',
  'locale',
  'timezone',
  'password',
]);

const isSelfService = (attribute: string) => SELF_SERVICE.has(attribute.toLowerCase());

/** The top-level attribute a PATCH path addresses (`name.givenName` → `name`); `urn:…` of an extension otherwise. */
function rootAttribute(path: string): string {
  const trimmed = path.trim();
  const lower = trimmed.toLowerCase();
  const rest = lower.startsWith(`${CORE_URN}:`) ? trimmed.slice(CORE_URN.length + 1) : trimmed;
  if (rest.toLowerCase().startsWith('urn:')) return rest;
  return rest.split(/[.[]/, 1)[0]!;
}

/** RFC 7644 §3.5.2: modifying a read-only attribute is a 400 `mutability` error. */
function readOnly(attribute: string): ScimError {
  return new ScimError(400, `Attribute ${attribute} cannot be modified through /Me.`, 'mutability');
}

/** Refuses a /Me PATCH that touches an administrative attribute. */
export function assertSelfServicePatch(operations: readonly PatchOperation[]): void {
  for (const { path, value } of operations) {
    const names = path
      ? [rootAttribute(path)]
      : isJsonObject(value)
        ? Object.entries(value).flatMap(([key, v]) =>
            key.toLowerCase() === CORE_URN && isJsonObject(v) ? Object.keys(v) : [key],
          )
        : [];
    for (const name of names) {
      if (name.toLowerCase() !== 'schemas' && !isSelfService(name)) throw readOnly(name);
    }
  }
}

/**
 * A /Me PUT body with its administrative attributes taken from the stored user: they are
 * read-only here, so the values sent are ignored (RFC 7644 §3.5.1) and the stored ones kept.
 */
export function selfServiceReplacement(body: unknown, stored: JsonObject): unknown {
  if (!isJsonObject(body)) return body;
  const kept = Object.entries(body).filter(
    ([key]) => isSelfService(key) || key === 'userName' || key === 'schemas',
  );
  const administrative = Object.entries(stored).filter(
    ([key]) => !isSelfService(key) && !['userName', 'schemas', 'id', 'meta'].includes(key),
  );
  return Object.fromEntries([...kept, ...administrative]);
}
