import {
  type CompiledSchema,
  compileSchema,
  isJsonObject,
  keyPath,
  type SchemaIssue,
} from '@mcp-identity/common';
import { POLICIES } from './index.js';

const validators = new Map<string, CompiledSchema<unknown>>();
for (const factory of POLICIES.values()) {
  for (const [version, schema] of Object.entries(factory.versions)) {
    validators.set(`${factory.name}@${version}`, compileSchema(schema));
  }
}

export function isKnownPolicy(name: string): boolean {
  return POLICIES.has(name);
}

export function supportedVersions(name: string): string[] {
  return Object.keys(POLICIES.get(name)?.versions ?? {});
}

/** The alternatives of a failed `anyOf` of required members, read from the schema itself. */
function anyOfMembers(alternatives: unknown): string {
  return (Array.isArray(alternatives) ? alternatives : [])
    .flatMap((option: unknown) =>
      isJsonObject(option) && Array.isArray(option.required) ? option.required : [],
    )
    .join(', ');
}

function describe(issue: SchemaIssue, at: string): string {
  const where = keyPath(issue.path, at);
  switch (issue.keyword) {
    case 'additionalProperties':
      return `${where}: unknown parameter`;
    case 'anyOf':
      return `${where}: at least one of ${anyOfMembers(issue.schema)} is required`;
    default:
      return `${where}: ${issue.message}`;
  }
}

/** Validates a policy's params against its schema; returns one message per problem. */
export function validatePolicyParams(
  name: string,
  version: string,
  params: unknown,
  at: string,
): string[] {
  const validator = validators.get(`${name}@${version}`);
  if (!validator) return [`${at}: unsupported version`];
  // Ajv also reports each branch of a failed anyOf; the anyOf summary says it better.
  const issues = validator.issues(params ?? {}).filter((issue) => !issue.inAlternative);
  return [...new Set(issues.map((issue) => describe(issue, `${at}.params`)))];
}
