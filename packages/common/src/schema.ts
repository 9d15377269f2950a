import { type Static, type TSchema, type TUnsafe, Type } from '@sinclair/typebox';
import { Ajv, type ErrorObject } from 'ajv';
import { McpIdentityError } from './errors.js';

/**
 * Configuration and policy documents are described once, as TypeBox schemas: the schema is
 * plain JSON Schema for Ajv, and `Static<typeof SCHEMA>` is the TypeScript type of a value that
 * passed it, so the two cannot drift. Ajv caches each compiled schema by object, so compiling
 * the same schema twice costs nothing.
 */
// `anyOf: [{ required: [...] }]` names members declared beside it, so strictRequired is off;
// `verbose` gives each error its keyword's schema (`SchemaIssue.schema`).
const ajv = new Ajv({ allErrors: true, strict: true, strictRequired: false, verbose: true });

/** One reason a value does not match its schema. */
export interface SchemaIssue {
  /**
   * Where: the path of the offending value (array indices as numbers), ending with the member's
   * name for an unknown or a missing member.
   */
  path: Array<string | number>;
  /** The JSON Schema keyword that failed: `type`, `required`, `additionalProperties`, `anyOf`… */
  keyword: string;
  /** `unknown key`, `is required`, or Ajv's own words (`must be >= 1`). */
  message: string;
  /** It comes from one alternative of an `anyOf`, whose own issue sums the alternatives up. */
  inAlternative: boolean;
  /** The keyword's parameters in Ajv's error (`allowedValues` of an `enum`, …). */
  params: ErrorObject['params'];
  /** The failing keyword's value in the schema (the alternatives of an `anyOf`, …). */
  schema: unknown;
}

/** A value that must match a schema did not; the message lists every issue by JSON pointer. */
export class SchemaError extends McpIdentityError {
  readonly code = 'ERR_SCHEMA';

  constructor(
    what: string,
    readonly issues: readonly SchemaIssue[],
  ) {
    super(
      `${what} is invalid:\n${issues.map((i) => `  ${jsonPointer(i.path)}: ${i.message}`).join('\n')}`,
    );
  }
}

/** A compiled schema whose matching values have the type `T`. */
export interface CompiledSchema<T> {
  /** Whether the value matches; narrows it to `T`. */
  is(value: unknown): value is T;
  /** Every issue with the value, in Ajv's order; empty when it matches. */
  issues(value: unknown): SchemaIssue[];
  /** The value as a `T`, or a SchemaError naming `what` and every issue. */
  parse(value: unknown, what: string): T;
}

/** Compiles a TypeBox schema; the validator's type is the schema's own `Static` type. */
export function compileSchema<S extends TSchema>(schema: S): CompiledSchema<Static<S>> {
  return compileTyped<Static<S>>(schema);
}

/**
 * Compiles a schema built at run time whose type the caller derives by the same rules it built
 * the schema with (`loadConfig` does, from its field specs). Not exported by the package.
 */
export function compileTyped<T>(schema: object): CompiledSchema<T> {
  const validate = ajv.compile<T>(schema);
  const issues = (value: unknown): SchemaIssue[] =>
    validate(value) ? [] : (validate.errors ?? []).map(issueOf);
  return {
    is: (value): value is T => validate(value),
    issues,
    parse(value, what) {
      if (validate(value)) return value;
      throw new SchemaError(what, issues(value));
    },
  };
}

/** A schema of one of the given strings, typed as their union (JSON Schema `enum`). */
export function stringEnum<const V extends readonly string[]>(values: V): TUnsafe<V[number]> {
  return Type.Unsafe<V[number]>({ enum: [...values] });
}

/** A JSON object as parsed from a document: its members are not yet checked. */
export type JsonObject = Record<string, unknown>;

/** A JSON object (not an array, not null): for checks that also run on invalid documents. */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `['a', 'b', 0, 'c']` → `a.b[0].c`, appended to `prefix` when given. */
export function keyPath(path: ReadonlyArray<string | number>, prefix = ''): string {
  return path.reduce<string>(
    (key, part) => (typeof part === 'number' ? `${key}[${part}]` : key ? `${key}.${part}` : part),
    prefix,
  );
}

function jsonPointer(path: ReadonlyArray<string | number>): string {
  return path.map((part) => `/${String(part).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

function issueOf(error: ErrorObject): SchemaIssue {
  const path: Array<string | number> = error.instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
  const inAlternative = /\/anyOf\/\d+\//.test(error.schemaPath);
  // Not the error itself: with `verbose` it holds the offending value, which may be a secret.
  const base = {
    keyword: error.keyword,
    inAlternative,
    params: error.params,
    schema: error.schema,
  };
  if (error.keyword === 'additionalProperties') {
    return {
      ...base,
      path: [...path, String(error.params.additionalProperty)],
      message: 'unknown key',
    };
  }
  if (error.keyword === 'required') {
    return {
      ...base,
      path: [...path, String(error.params.missingProperty)],
      message: 'is required',
    };
  }
  return { ...base, path, message: error.message ?? 'is invalid' };
}
