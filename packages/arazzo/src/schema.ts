/** Structural validation against the Arazzo 1.0 JSON Schema (schema/arazzo-1.0.schema.json). */
import { readFileSync } from 'node:fs';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { getByPointer, joinPointer } from './json-pointer.js';

interface Compiled {
  validate: ValidateFunction;
  step: object;
  stepTargets: object[];
  reusable: object;
}

let compiled: Compiled | undefined;

function validator(): Compiled {
  if (!compiled) {
    const schema = JSON.parse(
      readFileSync(new URL('../schema/arazzo-1.0.schema.json', import.meta.url), 'utf8'),
    );
    // verbose: errors carry their parentSchema, which tells which oneOf branch produced them.
    // The validator runs once per document: compiling fast matters more than validating fast.
    const ajv = new Ajv2020({
      allErrors: true,
      strict: false,
      verbose: true,
      code: { optimize: false },
    });
    // RFC 3986 URI references never contain whitespace (nor control characters, below space).
    ajv.addFormat(
      'uri-reference',
      (value: string) => !/\s/.test(value) && [...value].every((ch) => ch >= ' '),
    );
    compiled = {
      validate: ajv.compile(schema),
      step: schema.$defs['step-object'],
      stepTargets: schema.$defs['step-object'].oneOf,
      reusable: schema.$defs['reusable-object'],
    };
  }
  return compiled;
}

export interface SchemaProblem {
  pointer: string;
  message: string;
}

function isReusableAt(doc: unknown, pointer: string): boolean {
  const instance = getByPointer(doc, pointer);
  return instance !== null && typeof instance === 'object' && 'reference' in instance;
}

/** Keeps the errors a person needs: the oneOf branch the value was meant for, no noise. */
function relevant(doc: unknown, error: ErrorObject, all: ErrorObject[], schema: Compiled): boolean {
  if (error.keyword === 'if') return false;
  if (schema.stepTargets.includes(error.parentSchema as object)) return false;
  if (error.parentSchema === schema.step && error.keyword === 'oneOf') return true;
  const parent = error.instancePath.replace(/\/[^/]*$/, '');
  const reusableItem = isReusableAt(doc, error.instancePath) || isReusableAt(doc, parent);
  if ((error.parentSchema === schema.reusable) !== reusableItem) return false;
  if (error.keyword === 'oneOf' || error.keyword === 'anyOf') {
    return !all.some(
      (other) =>
        other !== error &&
        other.instancePath.startsWith(error.instancePath) &&
        other.keyword !== error.keyword,
    );
  }
  return true;
}

function describe(error: ErrorObject, schema: Compiled): SchemaProblem {
  if (error.parentSchema === schema.step && error.keyword === 'oneOf') {
    return {
      pointer: error.instancePath,
      message: 'a step needs exactly one of operationId, operationPath or workflowId',
    };
  }
  if (error.keyword === 'unevaluatedProperties') {
    const name = String((error.params as { unevaluatedProperty: string }).unevaluatedProperty);
    return {
      pointer: `${error.instancePath}${joinPointer(name)}`,
      message: `unknown property "${name}"`,
    };
  }
  let message = error.message ?? 'is invalid';
  if (error.keyword === 'enum') {
    message += `: ${(error.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`;
  }
  if (error.keyword === 'const') {
    message += `: ${String((error.params as { allowedValue: unknown }).allowedValue)}`;
  }
  return { pointer: error.instancePath, message };
}

export function schemaProblems(doc: unknown): SchemaProblem[] {
  const schema = validator();
  if (schema.validate(doc)) return [];
  const errors = schema.validate.errors ?? [];
  const seen = new Set<string>();
  const problems: SchemaProblem[] = [];
  for (const error of errors) {
    if (!relevant(doc, error, errors, schema)) continue;
    const problem = describe(error, schema);
    const key = `${problem.pointer}\u0000${problem.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    problems.push(problem);
  }
  return problems;
}
