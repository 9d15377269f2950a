import type { JsonObject } from '@mcp-identity/common';
import { MAX_BULK_OPERATIONS, MAX_BULK_PAYLOAD } from './bulk.js';
import { GROUP_SCHEMA, LIST_RESPONSE, type Locations, ROLE_SCHEMA } from './render.js';
import {
  AGENT_SCHEMA,
  type AttributeSpec,
  CORE_USER,
  CUSTOM_USER,
  ENTERPRISE_USER,
  type UserSchema,
  WSO2_USER,
} from './user-schema.js';

export function serviceProviderConfig(locations: Locations): JsonObject {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
    documentationUri: 'https://is.docs.wso2.com/en/latest/apis/scim2/',
    patch: { supported: true },
    bulk: { supported: true, maxOperations: MAX_BULK_OPERATIONS, maxPayloadSize: MAX_BULK_PAYLOAD },
    filter: { supported: true, maxResults: 200 },
    changePassword: { supported: true },
    // Unlike WSO2 (both false): RFC 7644 §3.4.2.3 sorting and §3.14 versions are served.
    sort: { supported: true },
    etag: { supported: true },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'OAuth Bearer Token',
        description: 'Authentication scheme using the OAuth Bearer Token Standard',
        specUri: 'https://www.rfc-editor.org/info/rfc6750',
        primary: true,
      },
    ],
    meta: {
      location: locations.path('/scim2/ServiceProviderConfig'),
      resourceType: 'ServiceProviderConfig',
    },
  };
}

const RESOURCE_TYPE = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType';

/** Like WSO2, only User and Group are advertised. */
function resourceTypeDefinitions(locations: Locations): JsonObject[] {
  return [
    {
      schemas: [RESOURCE_TYPE],
      id: 'User',
      name: 'User',
      endpoint: '/Users',
      description: 'User Account',
      schema: CORE_USER,
      schemaExtensions: [
        { schema: ENTERPRISE_USER, required: false },
        { schema: CUSTOM_USER, required: false },
        { schema: WSO2_USER, required: false },
      ],
      meta: { location: locations.path('/scim2/ResourceTypes/User'), resourceType: 'ResourceType' },
    },
    {
      schemas: [RESOURCE_TYPE],
      id: 'Group',
      name: 'Group',
      endpoint: '/Groups',
      description: 'Group',
      schema: GROUP_SCHEMA,
      meta: {
        location: locations.path('/scim2/ResourceTypes/Group'),
        resourceType: 'ResourceType',
      },
    },
  ];
}

const listOf = (resources: JsonObject[]): JsonObject => ({
  totalResults: resources.length,
  itemsPerPage: resources.length,
  startIndex: 1,
  schemas: [LIST_RESPONSE],
  Resources: resources,
});

export function resourceTypes(locations: Locations): JsonObject {
  return listOf(resourceTypeDefinitions(locations));
}

/** One resource type by id (RFC 7644 §4), or undefined. */
export function resourceType(locations: Locations, id: string): JsonObject | undefined {
  return resourceTypeDefinitions(locations).find((t) => t.id === id);
}

/** An attribute definition's characteristics (RFC 7643 §7) that differ from the defaults. */
type Characteristics = {
  type?: 'reference';
  referenceTypes?: string[];
  canonicalValues?: string[];
  required?: boolean;
  caseExact?: boolean;
  mutability?: 'readOnly' | 'immutable' | 'writeOnly';
  returned?: 'always' | 'never';
  uniqueness?: 'server';
};

/**
 * Characteristics shared by every schema, by attribute name or `attribute.sub`. Every
 * reference names its `referenceTypes` (RFC 7643 §2.3.7; model-building clients refuse a
 * reference without them); roles are `uri` because Role is not an advertised resource type.
 * A member's `display` is readOnly: the IdP replaces it with the referenced user's name.
 */
const CHARACTERISTICS: Record<string, Characteristics> = {
  id: { caseExact: true, mutability: 'readOnly', returned: 'always', uniqueness: 'server' },
  externalId: { caseExact: true },
  // WSO2 never renames a user (README, deviations): set on creation, then immutable.
  userName: { required: true, uniqueness: 'server', mutability: 'immutable' },
  password: { mutability: 'writeOnly', returned: 'never' },
  profileUrl: { type: 'reference', referenceTypes: ['external'] },
  'photos.value': { type: 'reference', referenceTypes: ['external'] },
  'groups.$ref': { referenceTypes: ['Group'] },
  'roles.$ref': { referenceTypes: ['uri'] },
  'users.$ref': { referenceTypes: ['User'] },
  'manager.$ref': { referenceTypes: ['User'] },
  'manager.displayName': { mutability: 'readOnly' },
  'members.value': { mutability: 'immutable' },
  'members.$ref': { referenceTypes: ['User', 'Group'], mutability: 'immutable' },
  // Members are users only (agents are users): nested groups are not kept.
  'members.type': { mutability: 'immutable', canonicalValues: ['User'] },
  'members.display': { mutability: 'readOnly' },
};

/** One attribute definition with every characteristic RFC 7643 §7 lists spelled out. */
function definition(
  name: string,
  type: string,
  multiValued: boolean,
  characteristics: Characteristics,
): JsonObject {
  const { referenceTypes, canonicalValues, ...rest } = { type, ...characteristics };
  return {
    name,
    type: rest.type,
    multiValued,
    required: rest.required === true,
    caseExact: rest.caseExact === true,
    mutability: rest.mutability ?? 'readWrite',
    returned: rest.returned ?? 'default',
    uniqueness: rest.uniqueness ?? 'none',
    ...(referenceTypes ? { referenceTypes } : {}),
    ...(canonicalValues ? { canonicalValues } : {}),
  };
}

function describe(
  specs: readonly AttributeSpec[],
  overrides: Record<string, Characteristics> = {},
): JsonObject[] {
  return specs
    .filter((s) => s.name !== 'meta')
    .map((s) => ({
      ...definition(s.name, s.type, s.multiValued === true, {
        ...(s.readOnly ? { mutability: 'readOnly' } : {}),
        ...(s.required ? { required: true } : {}),
        ...CHARACTERISTICS[s.name],
        ...overrides[s.name],
      }),
      ...(s.subAttributes
        ? {
            subAttributes: s.subAttributes.map((sub) =>
              definition(sub, sub === 'primary' ? 'boolean' : 'string', false, {
                ...(sub === '$ref' ? { type: 'reference', caseExact: true } : {}),
                ...(s.readOnly ? { mutability: 'readOnly' } : {}),
                ...CHARACTERISTICS[`${s.name}.${sub}`],
              }),
            ),
          }
        : {}),
    }));
}

const GROUP_ATTRIBUTES: readonly AttributeSpec[] = [
  { name: 'id', type: 'string', readOnly: true },
  { name: 'displayName', type: 'string' },
  { name: 'externalId', type: 'string' },
  {
    name: 'members',
    type: 'complex',
    multiValued: true,
    subAttributes: ['value', 'display', '$ref', 'type'],
  },
];

const ROLE_ATTRIBUTES: readonly AttributeSpec[] = [
  { name: 'id', type: 'string', readOnly: true },
  { name: 'displayName', type: 'string' },
  { name: 'audience', type: 'complex', subAttributes: ['value', 'display', 'type'] },
  {
    name: 'users',
    type: 'complex',
    multiValued: true,
    subAttributes: ['value', 'display', '$ref'],
  },
  {
    name: 'groups',
    type: 'complex',
    multiValued: true,
    subAttributes: ['value', 'display', '$ref'],
  },
  { name: 'permissions', type: 'complex', multiValued: true, subAttributes: ['value', 'display'] },
];

const EXTENSION_NAMES: Record<string, [string, string]> = {
  [ENTERPRISE_USER]: ['EnterpriseUser', 'Enterprise User'],
  [CUSTOM_USER]: ['CustomUser', 'Custom User'],
  [WSO2_USER]: ['WSO2User', 'WSO2 User extension'],
  [AGENT_SCHEMA]: ['Agent', 'WSO2 Agent extension'],
};

/** Every schema a resource uses (RFC 7643 §7), user extensions with the current custom set. */
function schemaDefinitions(
  userSchema: UserSchema,
  coreAttributes: readonly AttributeSpec[],
): JsonObject[] {
  const definitions: JsonObject[] = [
    {
      id: CORE_USER,
      name: 'User',
      description: 'User Account',
      attributes: describe(coreAttributes),
    },
    ...Object.entries(EXTENSION_NAMES).map(([id, [name, description]]) => ({
      id,
      name,
      description,
      attributes: describe(userSchema.extensions.get(id) ?? []),
    })),
    {
      id: GROUP_SCHEMA,
      name: 'Group',
      description: 'Group',
      attributes: describe(GROUP_ATTRIBUTES, {
        displayName: { required: true, uniqueness: 'server' },
      }),
    },
    { id: ROLE_SCHEMA, name: 'Role', description: 'Role', attributes: describe(ROLE_ATTRIBUTES) },
  ];
  return definitions.map((d) => ({
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
    ...d,
  }));
}

export function schemas(
  userSchema: UserSchema,
  coreAttributes: readonly AttributeSpec[],
): JsonObject {
  return listOf(schemaDefinitions(userSchema, coreAttributes));
}

/** One schema by its URN (matched case-insensitively), or undefined. */
export function schema(
  userSchema: UserSchema,
  coreAttributes: readonly AttributeSpec[],
  id: string,
): JsonObject | undefined {
  return schemaDefinitions(userSchema, coreAttributes).find(
    (d) => String(d.id).toLowerCase() === id.toLowerCase(),
  );
}
