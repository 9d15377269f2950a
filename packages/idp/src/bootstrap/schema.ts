import { Ajv, type ErrorObject } from 'ajv';

const NAME = { type: 'string', minLength: 1 } as const;
const NAMES = { type: 'array', items: NAME } as const;
const SCOPES = { anyOf: [{ const: '*' }, NAMES] } as const;

/** JSON Schema of the bootstrap file: every key is known, every value of the right type. */
const BOOTSTRAP_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    customAttributes: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'type'],
        properties: {
          name: NAME,
          type: { enum: ['string', 'boolean', 'integer', 'dateTime'] },
        },
      },
    },
    applications: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name'],
        properties: {
          name: NAME,
          clientId: NAME,
          clientSecret: NAME,
          grantTypes: {
            type: 'array',
            items: { enum: ['client_credentials', 'authorization_code', 'refresh_token'] },
          },
          scopes: SCOPES,
          redirectUris: NAMES,
        },
      },
    },
    // SCIM user bodies: the SCIM layer checks their attributes.
    users: {
      type: 'array',
      items: { type: 'object', required: ['userName'], properties: { userName: NAME } },
    },
    groups: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['displayName'],
        properties: { displayName: NAME, members: NAMES },
      },
    },
    roles: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['displayName'],
        properties: { displayName: NAME, permissions: SCOPES, users: NAMES, groups: NAMES },
      },
    },
    apiResources: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['identifier', 'name', 'scopes'],
        properties: {
          identifier: NAME,
          name: NAME,
          scopes: NAMES,
          dynamicClients: { type: 'boolean' },
          applications: NAMES,
        },
      },
    },
  },
} as const;

const validate = new Ajv({ allErrors: true, strict: true }).compile(BOOTSTRAP_SCHEMA);

/** Problems of a bootstrap document, each `key.path: message`; empty when it is valid. */
export function bootstrapProblems(document: unknown): string[] {
  if (validate(document)) return [];
  const problems = (validate.errors ?? [])
    // `anyOf` reports each failed branch and then itself: keep the summary only.
    .filter((e) => !(e.schemaPath.includes('/anyOf/') && e.keyword !== 'anyOf'))
    .map(describe);
  return [...new Set(problems)];
}

/** `/a/0/b` → `a[0].b` */
function keyPath(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce(
      (path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : path ? `${path}.${part}` : part),
      '',
    );
}

function describe(error: ErrorObject): string {
  const key = keyPath(error.instancePath);
  const child = (name: string) => (key ? `${key}.${name}` : name);
  switch (error.keyword) {
    case 'additionalProperties':
      return `${child((error.params as { additionalProperty: string }).additionalProperty)}: unknown key`;
    case 'required':
      return `${child((error.params as { missingProperty: string }).missingProperty)}: is required`;
    case 'anyOf':
      return `${key}: must be "*" or a list of names`;
    case 'enum':
      return `${key}: must be one of ${(error.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`;
    default:
      return `${key || '(top level)'}: ${error.message ?? 'is invalid'}`;
  }
}
