import { isJsonObject, type JsonObject } from '@mcp-identity/common';
import { badRequest } from './errors.js';
import type { SortAttribute } from './sort.js';

export const CORE_USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const ENTERPRISE_USER = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const CUSTOM_USER = 'urn:scim:schemas:extension:custom:User';
export const WSO2_USER = 'urn:scim:wso2:schema';
export const AGENT_SCHEMA = 'urn:scim:wso2:agent:schema';

export type AttributeType = 'string' | 'boolean' | 'integer' | 'dateTime' | 'complex';

export type AttributeSpec = {
  name: string;
  type: AttributeType;
  multiValued?: boolean;
  subAttributes?: readonly string[];
  readOnly?: boolean;
  /** A create or replace without it is refused (advertised as `required` in /Schemas). */
  required?: boolean;
};

const MULTI_SUB = ['value', 'display', 'type', 'primary'];
const ADDRESS_SUB = [
  'formatted',
  'streetAddress',
  'locality',
  'region',
  'postalCode',
  'country',
  'type',
  'primary',
];

export const CORE_USER_ATTRIBUTES: readonly AttributeSpec[] = [
  { name: 'id', type: 'string', readOnly: true },
  { name: 'externalId', type: 'string' },
  { name: 'userName', type: 'string' },
  {
    name: 'name',
    type: 'complex',
    subAttributes: [
      'formatted',
      'familyName',
      'givenName',
      'middleName',
      'honorificPrefix',
      'honorificSuffix',
    ],
  },
  { name: 'displayName', type: 'string' },
  { name: 'nickName', type: 'string' },
  { name: 'profileUrl', type: 'string' },
  { name: 'title', type: 'string' },
  { name: 'userType', type: 'string' },
  { name: 'preferredLanguage', type: 'string' },
  { name: 'locale', type: 'string' },
  { name: 'timezone', type: 'string' },
  { name: 'active', type: 'boolean' },
  { name: 'password', type: 'string' },
  { name: 'emails', type: 'complex', multiValued: true, subAttributes: MULTI_SUB },
  { name: 'phoneNumbers', type: 'complex', multiValued: true, subAttributes: MULTI_SUB },
  { name: 'ims', type: 'complex', multiValued: true, subAttributes: MULTI_SUB },
  { name: 'photos', type: 'complex', multiValued: true, subAttributes: MULTI_SUB },
  { name: 'addresses', type: 'complex', multiValued: true, subAttributes: ADDRESS_SUB },
  {
    name: 'groups',
    type: 'complex',
    multiValued: true,
    readOnly: true,
    subAttributes: ['value', '$ref', 'display', 'type'],
  },
  {
    name: 'roles',
    type: 'complex',
    multiValued: true,
    readOnly: true,
    subAttributes: ['value', '$ref', 'display', 'type'],
  },
  { name: 'entitlements', type: 'complex', multiValued: true, subAttributes: MULTI_SUB },
  { name: 'x509Certificates', type: 'complex', multiValued: true, subAttributes: MULTI_SUB },
  { name: 'meta', type: 'complex', readOnly: true },
];

export const ENTERPRISE_ATTRIBUTES: readonly AttributeSpec[] = [
  { name: 'employeeNumber', type: 'string' },
  { name: 'costCenter', type: 'string' },
  { name: 'organization', type: 'string' },
  { name: 'division', type: 'string' },
  { name: 'department', type: 'string' },
  { name: 'manager', type: 'complex', subAttributes: ['value', '$ref', 'displayName'] },
];

export const AGENT_ATTRIBUTES: readonly AttributeSpec[] = [
  // WSO2's agent schema requires a display name and an owner.
  { name: 'DisplayName', type: 'string', required: true },
  { name: 'Description', type: 'string' },
  { name: 'Owner', type: 'string', required: true },
  { name: 'IsUserServingAgent', type: 'boolean' },
  { name: 'agentDisplayName', type: 'string' },
  { name: 'agentDescription', type: 'string' },
  { name: 'agentOwner', type: 'string' },
  { name: 'agentUrl', type: 'string' },
];

/** Attributes of WSO2's own extension that clients commonly send. */
export const WSO2_ATTRIBUTES: readonly AttributeSpec[] = [
  { name: 'askPassword', type: 'boolean' },
  { name: 'verifyEmail', type: 'boolean' },
  { name: 'accountLocked', type: 'boolean' },
  { name: 'accountDisabled', type: 'boolean' },
  { name: 'country', type: 'string' },
  { name: 'dateOfBirth', type: 'string' },
  { name: 'mobile', type: 'string' },
  { name: 'organization', type: 'string' },
];

export type CustomAttribute = { name: string; type: 'string' | 'boolean' | 'integer' | 'dateTime' };

/** The user schema with the custom attributes currently defined in the IdP. */
export class UserSchema {
  readonly extensions: ReadonlyMap<string, readonly AttributeSpec[]>;

  constructor(readonly custom: readonly CustomAttribute[]) {
    this.extensions = new Map<string, readonly AttributeSpec[]>([
      [ENTERPRISE_USER, ENTERPRISE_ATTRIBUTES],
      [CUSTOM_USER, custom.map((c) => ({ name: c.name, type: c.type }))],
      [WSO2_USER, WSO2_ATTRIBUTES],
      [AGENT_SCHEMA, AGENT_ATTRIBUTES],
    ]);
  }

  /** The extension URN matching `name` case-insensitively. */
  extensionUrn(name: string): string | undefined {
    const lower = name.toLowerCase();
    return [...this.extensions.keys()].find((urn) => urn.toLowerCase() === lower);
  }

  coreAttribute(name: string): AttributeSpec | undefined {
    return findSpec(CORE_USER_ATTRIBUTES, name);
  }

  extensionAttribute(urn: string, name: string): AttributeSpec | undefined {
    return findSpec(this.extensions.get(urn) ?? [], name);
  }

  /** `emails[...]`: a multi-valued complex attribute and the full keys of its sub-attributes. */
  valuePath(attribute: string) {
    const name = attribute.replace(new RegExp(`^${CORE_USER}:`, 'i'), '');
    const spec = this.coreAttribute(name);
    if (!spec?.multiValued || !spec.subAttributes || spec.readOnly) return undefined;
    return {
      attribute: spec.name,
      resolve: (sub: string) => {
        const subName = spec.subAttributes!.find((s) => s.toLowerCase() === sub.toLowerCase());
        return subName ? `${spec.name}.${subName}` : undefined;
      },
    };
  }

  /**
   * What a user sorts by for `sortBy` (RFC 7644 §3.4.2.3): a single-valued attribute or
   * sub-attribute, or a sub-attribute of a multi-valued one (`emails` meaning `emails.value`).
   * Read-only relations (`groups`, `roles`), `password` and type shorthands are not sortable.
   */
  sortAttribute(attribute: string): SortAttribute | undefined {
    const key = attribute.toLowerCase() === 'id' ? 'id' : this.filterKey(attribute);
    if (!key) return undefined;
    if (key === 'id') return { path: ['id'], multiValued: false, caseExact: true };
    if (key.startsWith('meta.')) {
      return { path: key.split('.'), multiValued: false, caseExact: true };
    }
    if (key.startsWith('urn:')) {
      const cut = key.lastIndexOf(':');
      const [name, sub] = key.slice(cut + 1).split('.');
      const urn = key.slice(0, cut);
      const spec = this.extensionAttribute(urn, name!)!;
      const path = sub ? [urn, spec.name, sub] : [urn, spec.name];
      return { path, multiValued: false, caseExact: spec.type !== 'string' || sub === '$ref' };
    }
    const [name, given] = key.split('.');
    const spec = this.coreAttribute(name!)!;
    if (spec.readOnly) return undefined;
    const sub = given ?? (spec.multiValued ? 'value' : undefined);
    if (sub !== undefined && !spec.subAttributes?.includes(sub)) return undefined;
    return {
      path: sub === undefined ? [spec.name] : [spec.name, sub],
      multiValued: spec.multiValued === true,
      caseExact: CASE_EXACT.has(spec.name) || sub === '$ref' || spec.type === 'boolean',
    };
  }

  /** Whether a canonical filter key can have several values per user. */
  isMultiValued(key: string): boolean {
    if (key.toLowerCase().startsWith('urn:')) return false;
    return this.coreAttribute(key.split('.')[0]!)?.multiValued === true;
  }

  /**
   * Canonical filter key for `attribute`, or undefined when it is not filterable: core names
   * (optionally URN-qualified), `<multi>.<type>` shorthands and `urn:…:<attr>` of extensions.
   */
  filterKey(attribute: string): string | undefined {
    let path = attribute;
    const corePrefix = `${CORE_USER}:`;
    if (path.toLowerCase().startsWith(corePrefix.toLowerCase())) {
      path = path.slice(corePrefix.length);
    }
    if (path.toLowerCase().startsWith('urn:')) {
      const cut = path.lastIndexOf(':');
      const urn = this.extensionUrn(path.slice(0, cut));
      const [name, sub] = path.slice(cut + 1).split('.');
      const spec = urn && name ? this.extensionAttribute(urn, name) : undefined;
      if (!urn || !spec) return undefined;
      if (spec.type === 'complex') {
        const subName = spec.subAttributes?.find((s) => s.toLowerCase() === sub?.toLowerCase());
        return subName ? `${urn}:${spec.name}.${subName}` : undefined;
      }
      return sub ? undefined : `${urn}:${spec.name}`;
    }
    const [name, sub, ...rest] = path.split('.');
    const spec = name ? this.coreAttribute(name) : undefined;
    if (!spec || rest.length > 0 || spec.name === 'password') return undefined;
    if (spec.name === 'meta') {
      const metaSub = ['created', 'lastModified'].find(
        (m) => m.toLowerCase() === sub?.toLowerCase(),
      );
      return metaSub ? `meta.${metaSub}` : undefined;
    }
    if (spec.type !== 'complex') return sub ? undefined : spec.name;
    if (!sub) return spec.multiValued ? spec.name : undefined;
    const subName = spec.subAttributes?.find((s) => s.toLowerCase() === sub.toLowerCase());
    if (subName) return `${spec.name}.${subName}`;
    // `addresses.work`, `emails.home`: WSO2's multi-valued type shorthand.
    return spec.multiValued && /^[a-z]+$/i.test(sub)
      ? `${spec.name}.${sub.toLowerCase()}`
      : undefined;
  }
}

/** Core attributes whose strings compare case-exactly (RFC 7643 §4.1, our /Schemas). */
const CASE_EXACT = new Set(['id', 'externalId']);

function findSpec(specs: readonly AttributeSpec[], name: string): AttributeSpec | undefined {
  const lower = name.toLowerCase();
  return specs.find((s) => s.name.toLowerCase() === lower);
}

/** Every filter key of a stored user document with its values (lower-cased for indexing). */
export function indexedValues(doc: JsonObject, schema: UserSchema): [string, string][] {
  const out: [string, string][] = [];
  const add = (key: string, value: unknown) => {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      out.push([key.toLowerCase(), String(value).toLowerCase()]);
    }
  };
  for (const spec of CORE_USER_ATTRIBUTES) {
    const value = doc[spec.name];
    if (value === undefined || spec.name === 'password') continue;
    if (spec.type !== 'complex') {
      add(spec.name, value);
    } else if (spec.multiValued && Array.isArray(value)) {
      for (const entry of value.filter(isJsonObject)) {
        const primary = spec.name === 'addresses' ? entry.formatted : entry.value;
        add(spec.name, primary);
        if (typeof entry.type === 'string') add(`${spec.name}.${entry.type}`, primary);
        for (const sub of spec.subAttributes ?? []) add(`${spec.name}.${sub}`, entry[sub]);
      }
    } else if (isJsonObject(value)) {
      for (const sub of spec.subAttributes ?? []) add(`${spec.name}.${sub}`, value[sub]);
    }
  }
  for (const [urn, specs] of schema.extensions) {
    const ext = doc[urn];
    if (!isJsonObject(ext)) continue;
    for (const spec of specs) {
      const value = ext[spec.name];
      if (spec.type === 'complex') {
        if (!isJsonObject(value)) continue;
        for (const sub of spec.subAttributes ?? []) add(`${urn}:${spec.name}.${sub}`, value[sub]);
      } else {
        add(`${urn}:${spec.name}`, value);
      }
    }
  }
  return out;
}

/**
 * Checks a value against the attribute's type; throws WSO2-style 400s. Returns the value in
 * canonical form: sub-attribute names in the schema's case, `"True"`/`"false"` as booleans
 * (Entra sends strings), and a bare id for a complex attribute with a `value` (Entra's
 * enterprise `manager`) as `{ value }`.
 */
export function checkValue(spec: AttributeSpec, value: unknown, label: string): unknown {
  if (value === null) return value;
  if (spec.multiValued) {
    if (!Array.isArray(value) || !value.every(isJsonObject)) {
      throw badRequest(`Attribute ${label} must be a multi-valued complex attribute.`);
    }
    return (value as JsonObject[]).map((entry) => canonicalSubAttributes(spec, entry, label));
  }
  switch (spec.type) {
    case 'complex':
      if (typeof value === 'string' && spec.subAttributes?.includes('value')) return { value };
      if (!isJsonObject(value)) throw badRequest(`Attribute ${label} must be a complex attribute.`);
      return canonicalSubAttributes(spec, value, label);
    case 'boolean': {
      if (typeof value === 'boolean') return value;
      const text = typeof value === 'string' ? value.toLowerCase() : undefined;
      if (text === 'true' || text === 'false') return text === 'true';
      throw badRequest(`Attribute ${label} must be a boolean.`);
    }
    case 'integer':
      if (Number.isInteger(value)) return value;
      throw badRequest(`Attribute ${label} must be an integer.`);
    default:
      if (typeof value === 'string') return value;
      throw badRequest(`Attribute ${label} must be a string.`);
  }
}

function canonicalSubAttributes(spec: AttributeSpec, value: JsonObject, label: string): JsonObject {
  if (!spec.subAttributes) return value;
  const out: JsonObject = {};
  for (const [key, v] of Object.entries(value)) {
    if (v === null) continue; // RFC 7643 §2.5: no value, whatever the name.
    const name = spec.subAttributes.find((s) => s.toLowerCase() === key.toLowerCase());
    if (!name) throw badRequest(`No such attribute with the name : ${label}.${key}`);
    out[name] = v;
  }
  return out;
}
