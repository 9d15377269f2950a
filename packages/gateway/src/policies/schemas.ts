import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { POLICIES } from './index.js';

const ajv = new Ajv({ allErrors: true, strict: false, verbose: true });
const validators = new Map<string, ValidateFunction>();
for (const factory of POLICIES.values()) {
  for (const [version, schema] of Object.entries(factory.versions)) {
    validators.set(`${factory.name}@${version}`, ajv.compile(schema));
  }
}

export function isKnownPolicy(name: string): boolean {
  return POLICIES.has(name);
}

export function supportedVersions(name: string): string[] {
  return Object.keys(POLICIES.get(name)?.versions ?? {});
}

/** The alternatives of a failed `anyOf` of required members, read from the schema itself. */
function anyOfMembers(schema: unknown): string {
  const options = (schema as { anyOf?: Array<{ required?: string[] }> } | undefined)?.anyOf ?? [];
  return options.flatMap((option) => option.required ?? []).join(', ');
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
      return `${where}: at least one of ${anyOfMembers(error.parentSchema)} is required`;
    default:
      return `${where}: ${error.message ?? 'is invalid'}`;
  }
}

/** Validates a policy's params against its schema; returns one message per problem. */
export function validatePolicyParams(
  name: string,
  version: string,
  params: unknown,
  at: string,
): string[] {
  const validate = validators.get(`${name}@${version}`);
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
