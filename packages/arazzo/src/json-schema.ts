/**
 * Turning OpenAPI Schema Objects into self-contained JSON Schemas, and reading the schema of a
 * value inside another by JSON pointer: what a workflow output's type is derived from.
 */
import { isJsonObject } from '@mcp-identity/common';
import type { OpenApiSource } from './openapi.js';

export type JsonSchema = Record<string, unknown>;

const SUBSCHEMA_MAPS = ['properties', 'patternProperties'];
const SUBSCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf'];
const SUBSCHEMAS = ['items', 'additionalProperties', 'not'];
/** Keywords JSON Schema (draft-07 and 2020-12) and OpenAPI share, copied as they are. */
const PLAIN_KEYWORDS = new Set([
  'type',
  'enum',
  'const',
  'required',
  'title',
  'description',
  'format',
  'pattern',
  'minimum',
  'maximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minProperties',
  'maxProperties',
  'default',
  'readOnly',
  'writeOnly',
  'deprecated',
]);

/**
 * A JSON Schema for an OpenAPI 3.0/3.1 Schema Object: local `$ref`s inlined (a reference back
 * into itself becomes `{}`), OpenAPI 3.0's `nullable` and boolean `exclusiveMinimum`/
 * `exclusiveMaximum` rewritten, OpenAPI-only keywords (`example`, `discriminator`, `xml`,
 * `x-…`) dropped.
 */
export function toJsonSchema(
  source: OpenApiSource,
  node: unknown,
  seen: ReadonlySet<string> = new Set(),
): JsonSchema {
  if (isJsonObject(node) && typeof node.$ref === 'string') {
    const target = source.deref(node);
    if (seen.has(node.$ref) || !isJsonObject(target)) return {};
    return toJsonSchema(source, target, new Set([...seen, node.$ref]));
  }
  if (node === true || !isJsonObject(node)) return {};
  const schema: JsonSchema = {};
  for (const [key, value] of Object.entries(node)) {
    if (PLAIN_KEYWORDS.has(key)) schema[key] = value;
    else if (SUBSCHEMAS.includes(key)) {
      schema[key] = typeof value === 'boolean' ? value : toJsonSchema(source, value, seen);
    } else if (SUBSCHEMA_LISTS.includes(key) && Array.isArray(value)) {
      schema[key] = value.map((item) => toJsonSchema(source, item, seen));
    } else if (SUBSCHEMA_MAPS.includes(key) && isJsonObject(value)) {
      schema[key] = Object.fromEntries(
        Object.entries(value).map(([name, item]) => [name, toJsonSchema(source, item, seen)]),
      );
    }
  }
  for (const bound of ['Minimum', 'Maximum'] as const) {
    const flag = node[`exclusive${bound}`];
    const limit = node[bound.toLowerCase()];
    if (typeof flag === 'number') schema[`exclusive${bound}`] = flag;
    else if (flag === true && typeof limit === 'number') {
      schema[`exclusive${bound}`] = limit;
      delete schema[bound.toLowerCase()];
    }
  }
  return node.nullable === true ? nullable(schema) : schema;
}

/** True for a schema that accepts every value (annotations aside). */
export function isPermissive(schema: JsonSchema): boolean {
  return Object.keys(schema).every((key) => ANNOTATIONS.includes(key));
}

/** The JSON types a schema allows, when its keywords say so plainly. */
export function typesOf(schema: JsonSchema): string[] | undefined {
  if (typeof schema.type === 'string') return [schema.type];
  if (Array.isArray(schema.type)) return schema.type as string[];
  for (const keyword of ['anyOf', 'oneOf']) {
    const branches = schema[keyword];
    if (!Array.isArray(branches)) continue;
    const types = branches.map((branch) => (isJsonObject(branch) ? typesOf(branch) : undefined));
    if (types.some((list) => list === undefined)) return undefined;
    return [...new Set(types.flat() as string[])];
  }
  if (Array.isArray(schema.allOf)) {
    for (const member of schema.allOf) {
      const types = isJsonObject(member) ? typesOf(member) : undefined;
      if (types) return types;
    }
  }
  return undefined;
}

/**
 * The schema also accepting `null`. A top-level `type` list is kept or added wherever the
 * types are known, so clients that only read `type` still see them.
 */
export function nullable(schema: JsonSchema): JsonSchema {
  if (isPermissive(schema)) return schema;
  const types = typesOf(schema);
  if (types && isPlainTypeUnion(schema)) {
    const { anyOf: _anyOf, oneOf: _oneOf, ...annotations } = schema;
    return { ...annotations, type: [...new Set([...types, 'null'])] };
  }
  // These keywords would still refuse null after `type` allows it.
  const constrained = ['enum', 'const', 'allOf', 'anyOf', 'oneOf', 'not'].some(
    (keyword) => keyword in schema,
  );
  if (types && (typeof schema.type === 'string' || Array.isArray(schema.type)) && !constrained) {
    return { ...schema, type: [...new Set([...types, 'null'])] };
  }
  const { title, description, ...rest } = schema;
  return {
    ...(title !== undefined ? { title } : {}),
    ...(description !== undefined ? { description } : {}),
    ...(types ? { type: [...new Set([...types, 'null'])] } : {}),
    anyOf: [rest, { type: 'null' }],
  };
}

const ANNOTATIONS = ['title', 'description'];

/** `anyOf`/`oneOf` of bare `{ type }` branches and nothing else: the same as a type list. */
function isPlainTypeUnion(schema: JsonSchema): boolean {
  const keys = Object.keys(schema).filter((key) => !ANNOTATIONS.includes(key));
  if (keys.length !== 1 || (keys[0] !== 'anyOf' && keys[0] !== 'oneOf')) return false;
  const branches = schema[keys[0]];
  return (
    Array.isArray(branches) &&
    branches.every((branch) => isJsonObject(branch) && Object.keys(branch).join() === 'type')
  );
}

/** One schema accepting what any of them accepts; `{}` when one of them is permissive. */
export function union(schemas: readonly JsonSchema[]): JsonSchema {
  const distinct = [...new Map(schemas.map((s) => [JSON.stringify(s), s])).values()];
  if (distinct.length === 0 || distinct.some(isPermissive)) return {};
  if (distinct.length === 1) return distinct[0]!;
  const types = typesOf({ anyOf: distinct });
  return { ...(types ? { type: types } : {}), anyOf: distinct };
}

const MEMBER_KEYWORDS = [
  'properties',
  'patternProperties',
  'additionalProperties',
  'items',
  'allOf',
  'anyOf',
  'oneOf',
];
const CONTAINER_TYPES = ['object', 'array'];

/** False for an object or array schema that says nothing of its members (`type: object`). */
function describesMembers(schema: JsonSchema): boolean {
  if (MEMBER_KEYWORDS.some((keyword) => keyword in schema)) return true;
  const types = typesOf(schema);
  return types !== undefined && !types.some((type) => CONTAINER_TYPES.includes(type));
}

/**
 * The schemas of what a JSON pointer reaches inside values of `schema` (a converted, self-
 * contained schema). `found` is empty when no value of the schema has that member (the
 * pointer then resolves to nothing); a member the schema leaves open is `{}`. Properties an
 * object schema does not declare are taken as absent: descriptions list what servers send.
 */
export function schemasAt(schema: JsonSchema, tokens: readonly string[]): JsonSchema[] {
  if (tokens.length === 0) return [schema];
  if (isPermissive(schema) || !describesMembers(schema)) return [{}];
  const [token, ...rest] = tokens as [string, ...string[]];
  const found: JsonSchema[] = [];
  for (const keyword of ['allOf', 'anyOf', 'oneOf']) {
    const branches = schema[keyword];
    if (!Array.isArray(branches)) continue;
    const reached = branches.flatMap((branch) =>
      isJsonObject(branch) ? schemasAt(branch, tokens) : [],
    );
    // Every allOf member holds at once: a member found in several of them is in all of them.
    found.push(...(keyword === 'allOf' && reached.length > 1 ? [{ allOf: reached }] : reached));
  }
  const properties = isJsonObject(schema.properties) ? schema.properties : {};
  if (isJsonObject(properties[token])) found.push(...schemasAt(properties[token], rest));
  else if (/^(0|[1-9][0-9]*)$/.test(token) && isJsonObject(schema.items)) {
    found.push(...schemasAt(schema.items, rest));
  } else if (isJsonObject(schema.additionalProperties)) {
    found.push(...schemasAt(schema.additionalProperties, rest));
  } else if (schema.additionalProperties === true) found.push({});
  return found;
}
