import { isJsonObject, type JsonObject } from '@mcp-identity/common';
import { badRequest, invalidSyntax, ScimError } from './errors.js';
import type { FilterTree } from './filter.js';

export type PatchKind = 'add' | 'replace' | 'remove';
export type PatchOperation = { op: PatchKind; path?: string; value?: unknown };

/** Operations per PATCH request: bounds the work one request can ask for. */
export const MAX_PATCH_OPERATIONS = 1000;

/** Validates a PatchOp request body (WSO2 does not check its `schemas` value). */
export function readPatchOperations(body: unknown): PatchOperation[] {
  const ops = isJsonObject(body) ? (body.Operations ?? body.operations) : undefined;
  if (!Array.isArray(ops)) {
    throw invalidSyntax('Operations attribute is missing or is not a valid JSON array.');
  }
  if (ops.length > MAX_PATCH_OPERATIONS) {
    throw badRequest(
      `The number of operations in the PATCH request exceeds the maximum: ${MAX_PATCH_OPERATIONS}`,
    );
  }
  return ops.map((raw) => {
    if (!isJsonObject(raw)) throw invalidSyntax('Invalid patch operation.');
    const op = String(raw.op ?? '').toLowerCase();
    if (op !== 'add' && op !== 'replace' && op !== 'remove') {
      throw badRequest(`Unknown operation: ${String(raw.op)}`, 'invalidSyntax');
    }
    if (raw.path !== undefined && typeof raw.path !== 'string') {
      throw invalidSyntax('The path of a patch operation must be a string.');
    }
    if (op === 'remove' && !raw.path) {
      throw new ScimError(400, 'No path value specified for remove operation', 'noTarget');
    }
    if (op !== 'remove' && raw.value === undefined) {
      throw invalidSyntax(`Value is missing for the ${op} operation.`);
    }
    return { op, path: raw.path as string | undefined, value: raw.value };
  });
}

/** `attr`, `attr.sub`, `attr[filter]`, `attr[filter].sub`, each optionally `urn:…:`-prefixed. */
export type ParsedPath = {
  urn?: string;
  attribute: string;
  /** The text of the value filter between the brackets. */
  filter?: string;
  sub?: string;
};

const PATH = /^([A-Za-z$][\w$-]*)(?:\[(.+)\])?(?:\.([A-Za-z$][\w$-]*))?$/s;

/** Splits a PATCH path; `extensionUrns` are recognised case-insensitively as prefixes. */
export function parsePath(path: string, extensionUrns: readonly string[]): ParsedPath {
  let rest = path.trim();
  let urn: string | undefined;
  for (const candidate of extensionUrns) {
    if (rest.toLowerCase().startsWith(`${candidate.toLowerCase()}:`)) {
      urn = candidate;
      rest = rest.slice(candidate.length + 1);
      break;
    }
  }
  const match = PATH.exec(rest);
  if (!match) throw badRequest(`Invalid path: ${path}`, 'invalidPath');
  const [, attribute, filter, sub] = match;
  const parsed: ParsedPath = { attribute: attribute! };
  if (urn) parsed.urn = urn;
  if (filter) parsed.filter = filter;
  if (sub) parsed.sub = sub;
  return parsed;
}

/** Which entries of a multi-valued attribute a path's value filter selects. */
export type EntrySelector = {
  matches(entry: JsonObject): boolean;
  /** The entry to create when none matches (the equalities of the filter), if any. */
  seed?: JsonObject;
};

/** The equalities a new entry must satisfy to match `tree` (`type eq "work"`), if any. */
export function equalitySeed(tree: FilterTree, attribute: string): JsonObject | undefined {
  if (tree.op === 'eq') return { [tree.attribute.slice(attribute.length + 1)]: tree.value };
  if (tree.op !== 'and') return undefined;
  const seed: JsonObject = {};
  for (const part of tree.filters) {
    const partial = equalitySeed(part, attribute);
    if (!partial) return undefined;
    Object.assign(seed, partial);
  }
  return seed;
}

// Per-array index of entries by lower-cased `type`, so repeated merges stay linear.
const typeIndexes = new WeakMap<JsonObject[], Map<string, number>>();

/**
 * Merges entries of a multi-valued attribute in place: an incoming entry with the `type` of
 * an existing one replaces it (so a work address is updated, not duplicated); others are
 * appended.
 */
export function mergeByType(existing: unknown, incoming: JsonObject[]): JsonObject[] {
  const result = Array.isArray(existing) ? (existing as JsonObject[]) : [];
  let index = typeIndexes.get(result);
  if (!index) {
    index = new Map();
    result.forEach((entry, i) => {
      if (isJsonObject(entry) && typeof entry.type === 'string') {
        index!.set(entry.type.toLowerCase(), i);
      }
    });
    typeIndexes.set(result, index);
  }
  for (const entry of incoming) {
    const type = typeof entry.type === 'string' ? entry.type.toLowerCase() : undefined;
    const at = type === undefined ? undefined : index.get(type);
    if (at !== undefined) {
      result[at] = { ...result[at], ...entry };
    } else {
      if (type !== undefined) index.set(type, result.length);
      result.push(entry);
    }
  }
  return result;
}

/** Applies one path operation to `target` (an object holding the attribute). */
export function applyToContainer(
  target: JsonObject,
  key: string,
  path: { selector?: EntrySelector; sub?: string },
  op: PatchKind,
  value: unknown,
  multiValued: boolean,
): void {
  const current = target[key];
  const { selector, sub } = path;
  if (selector) {
    if (!multiValued) throw badRequest(`Invalid path: ${key}`, 'invalidPath');
    const entries = Array.isArray(current) ? (current.filter(isJsonObject) as JsonObject[]) : [];
    if (op === 'remove') {
      target[key] = sub
        ? entries.map((e) => {
            if (!selector.matches(e)) return e;
            const { [sub]: _removed, ...kept } = e;
            return kept;
          })
        : entries.filter((e) => !selector.matches(e));
      return;
    }
    const patchEntry = (e: JsonObject): JsonObject =>
      sub ? { ...e, [sub]: value } : { ...e, ...(isJsonObject(value) ? value : {}) };
    let matched = false;
    const patched = entries.map((e) => {
      if (!selector.matches(e)) return e;
      matched = true;
      return patchEntry(e);
    });
    if (!matched) {
      if (!selector.seed)
        throw new ScimError(400, `No entry of ${key} matches the path.`, 'noTarget');
      patched.push(patchEntry(selector.seed));
    }
    target[key] = patched;
    return;
  }
  if (sub) {
    if (multiValued) throw badRequest(`Invalid path: ${key}.${sub}`, 'invalidPath');
    const complex = isJsonObject(current) ? { ...current } : {};
    if (op === 'remove') delete complex[sub];
    else complex[sub] = value;
    target[key] = complex;
    return;
  }
  if (op === 'remove') {
    delete target[key];
  } else if (multiValued && op === 'add') {
    target[key] = mergeByType(
      current,
      (Array.isArray(value) ? value : [value]).filter(isJsonObject),
    );
  } else if (isJsonObject(value) && isJsonObject(current)) {
    // RFC 7644 §3.5.2.3: sub-attributes not in the value are left unchanged.
    target[key] = { ...current, ...value };
  } else {
    // A copy: later operations of the same request merge into it in place.
    target[key] = Array.isArray(value) ? value.slice() : value;
  }
}
