import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';

const stringList = { type: 'array', items: { type: 'string', minLength: 1 } };

const authGroup = {
  type: 'object',
  additionalProperties: false,
  properties: { enabled: { type: 'boolean' }, exceptions: stringList },
};

/** `mcp-auth` v1: spec §2.9 plus WSO2's per-group `{enabled, exceptions}` switches. */
const MCP_AUTH_V1 = {
  type: 'object',
  additionalProperties: false,
  properties: {
    issuers: stringList,
    audiences: stringList,
    requiredScopes: stringList,
    forwardToken: { type: 'boolean' },
    userIdClaim: { type: 'string', minLength: 1 },
    tools: authGroup,
    resources: authGroup,
    prompts: authGroup,
    methods: authGroup,
  },
};

const claimMatcher = {
  type: 'object',
  additionalProperties: false,
  required: ['claim', 'values'],
  properties: { claim: { type: 'string', minLength: 1 }, values: { ...stringList, minItems: 1 } },
};

const rule = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 256 },
    scopes: {
      type: 'object',
      additionalProperties: false,
      minProperties: 1,
      properties: { allOf: { ...stringList, minItems: 1 }, anyOf: { ...stringList, minItems: 1 } },
    },
    claims: {
      type: 'object',
      additionalProperties: false,
      minProperties: 1,
      properties: {
        allOf: { type: 'array', minItems: 1, items: claimMatcher },
        anyOf: { type: 'array', minItems: 1, items: claimMatcher },
      },
    },
    /** Deprecated WSO2 spelling of `scopes.anyOf`. */
    requiredScopes: { ...stringList, minItems: 1 },
  },
  anyOf: [{ required: ['scopes'] }, { required: ['claims'] }, { required: ['requiredScopes'] }],
};

const ruleList = { type: 'array', minItems: 1, items: rule };

/** `mcp-authz` v1: rules per capability type, plus the opt-in list filtering. */
const MCP_AUTHZ_V1 = {
  type: 'object',
  additionalProperties: false,
  properties: {
    tools: ruleList,
    resources: ruleList,
    prompts: ruleList,
    methods: ruleList,
    filterLists: { type: 'boolean' },
  },
  anyOf: [
    { required: ['tools'] },
    { required: ['resources'] },
    { required: ['prompts'] },
    { required: ['methods'] },
  ],
};

export const POLICY_NAMES = ['mcp-auth', 'mcp-authz'] as const;
export type PolicyName = (typeof POLICY_NAMES)[number];

const ajv = new Ajv({ allErrors: true, strict: false });
const validators: Record<string, ValidateFunction> = {
  'mcp-auth@v1': ajv.compile(MCP_AUTH_V1),
  'mcp-authz@v1': ajv.compile(MCP_AUTHZ_V1),
};

export function isKnownPolicy(name: string): name is PolicyName {
  return (POLICY_NAMES as readonly string[]).includes(name);
}

export function supportedVersions(name: PolicyName): string[] {
  return Object.keys(validators)
    .filter((key) => key.startsWith(`${name}@`))
    .map((key) => key.slice(name.length + 1));
}

function describe(error: ErrorObject, at: string): string {
  const where =
    at +
    error.instancePath
      .split('/')
      .slice(1)
      .map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`))
      .join('');
  switch (error.keyword) {
    case 'additionalProperties':
      return `${where}.${(error.params as { additionalProperty: string }).additionalProperty}: unknown parameter`;
    case 'required':
      return `${where}.${(error.params as { missingProperty: string }).missingProperty}: is required`;
    case 'anyOf':
      return where.endsWith('params')
        ? `${where}: at least one of tools, resources, prompts, methods is required`
        : `${where}: a rule needs at least one of scopes, claims, requiredScopes`;
    default:
      return `${where}: ${error.message ?? 'is invalid'}`;
  }
}

/** Validates a policy's params against its schema; returns one message per problem. */
export function validatePolicyParams(
  name: PolicyName,
  version: string,
  params: unknown,
  at: string,
): string[] {
  const validate = validators[`${name}@${version}`];
  if (!validate) return [`${at}: unsupported version`];
  if (validate(params ?? {})) return [];
  const errors = validate.errors ?? [];
  // ajv also reports each branch of a failed anyOf; the anyOf summary says it better.
  return [
    ...new Set(
      errors
        .filter((e) => !/\/anyOf\/\d+\//.test(e.schemaPath))
        .map((e) => describe(e, `${at}.params`)),
    ),
  ];
}
