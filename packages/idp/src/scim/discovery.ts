import { MAX_BULK_OPERATIONS, MAX_BULK_PAYLOAD } from './bulk.js';
import { GROUP_SCHEMA, LIST_RESPONSE, type Locations } from './render.js';
import {
  type AttributeSpec,
  CORE_USER,
  CUSTOM_USER,
  ENTERPRISE_USER,
  type UserSchema,
} from './user-schema.js';

type Json = Record<string, unknown>;

export function serviceProviderConfig(locations: Locations): Json {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
    documentationUri: 'https://is.docs.wso2.com/en/latest/apis/scim2/',
    patch: { supported: true },
    bulk: { supported: true, maxOperations: MAX_BULK_OPERATIONS, maxPayloadSize: MAX_BULK_PAYLOAD },
    filter: { supported: true, maxResults: 200 },
    changePassword: { supported: true },
    sort: { supported: false },
    etag: { supported: false },
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

/** Like WSO2, only User and Group are advertised. */
export function resourceTypes(locations: Locations): Json {
  const types = [
    {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
      id: 'User',
      name: 'User',
      endpoint: '/Users',
      description: 'User Account',
      schema: CORE_USER,
      schemaExtensions: [
        { schema: ENTERPRISE_USER, required: false },
        { schema: CUSTOM_USER, required: false },
      ],
      meta: { location: locations.path('/scim2/ResourceTypes/User'), resourceType: 'ResourceType' },
    },
    {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
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
  return {
    totalResults: types.length,
    itemsPerPage: types.length,
    startIndex: 1,
    schemas: [LIST_RESPONSE],
    Resources: types,
  };
}

function describe(specs: readonly AttributeSpec[]): Json[] {
  return specs
    .filter((s) => s.name !== 'meta')
    .map((s) => ({
      name: s.name,
      type: s.type,
      multiValued: s.multiValued === true,
      required: s.name === 'userName',
      caseExact: false,
      mutability: s.readOnly ? 'readOnly' : s.name === 'password' ? 'writeOnly' : 'readWrite',
      returned: s.name === 'password' ? 'never' : 'default',
      uniqueness: s.name === 'userName' ? 'server' : 'none',
      ...(s.subAttributes
        ? {
            subAttributes: s.subAttributes.map((name) => ({
              name,
              type: name === 'primary' ? 'boolean' : 'string',
              multiValued: false,
            })),
          }
        : {}),
    }));
}

export function schemas(userSchema: UserSchema, coreAttributes: readonly AttributeSpec[]): Json {
  const definitions: Json[] = [
    {
      id: CORE_USER,
      name: 'User',
      description: 'User Account',
      attributes: describe(coreAttributes),
    },
    ...[ENTERPRISE_USER, CUSTOM_USER].map((id) => ({
      id,
      name: id === CUSTOM_USER ? 'CustomUser' : 'EnterpriseUser',
      description: id === CUSTOM_USER ? 'Custom User' : 'Enterprise User',
      attributes: describe(userSchema.extensions.get(id) ?? []),
    })),
    {
      id: GROUP_SCHEMA,
      name: 'Group',
      description: 'Group',
      attributes: describe([
        { name: 'displayName', type: 'string' },
        {
          name: 'members',
          type: 'complex',
          multiValued: true,
          subAttributes: ['value', 'display', '$ref'],
        },
      ]),
    },
  ];
  return {
    totalResults: definitions.length,
    itemsPerPage: definitions.length,
    startIndex: 1,
    schemas: [LIST_RESPONSE],
    Resources: definitions.map((d) => ({
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
      ...d,
    })),
  };
}
