import { badRequest, invalidSyntax, ScimError } from './errors.js';

export type PatchKind = 'add' | 'replace' | 'remove';
export type PatchOperation = { op: PatchKind; path?: string; value?: unknown };

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Validates a PatchOp request body (WSO2 does not check its `schemas` value). */
export function readPatchOperations(body: unknown): PatchOperation[] {
  const ops = isObject(body) ? (body.Operations ?? body.operations) : undefined;
  if (!Array.isArray(ops)) {
    throw invalidSyntax('Operations attribute is missing or is not a valid JSON array.');
  }
  return ops.map((raw) => {
    if (!isObject(raw)) throw invalidSyntax('Invalid patch operation.');
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

/** `attr`, `attr.sub`, `attr[x eq v]`, `attr[x eq v].sub`, each optionally `urn:…:`-prefixed. */
export type ParsedPath = {
  urn?: string;
  attribute: string;
  valueFilter?: { attribute: string; value: string };
  sub?: string;
};

const PATH =
  /^([A-Za-z$][\w$-]*)(?:\[\s*([\w$.]+)\s+eq\s+("(?:[^"\\]|\\.)*"|'[^']*'|[^\]\s]+)\s*\])?(?:\.([A-Za-z$][\w$-]*))?$/i;

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
  const [, attribute, filterAttribute, rawValue, sub] = match;
  const parsed: ParsedPath = { attribute: attribute! };
  if (urn) parsed.urn = urn;
  if (filterAttribute && rawValue) {
    const value = rawValue.startsWith('"')
      ? String(JSON.parse(rawValue))
      : rawValue.replace(/^'|'$/g, '');
    parsed.valueFilter = { attribute: filterAttribute, value };
  }
  if (sub) parsed.sub = sub;
  return parsed;
}

const sameText = (a: unknown, b: string) =>
  typeof a === 'string' || typeof a === 'number' || typeof a === 'boolean'
    ? String(a).toLowerCase() === b.toLowerCase()
    : false;

/**
 * Merges entries of a multi-valued attribute: an incoming entry with the `type` of an existing
 * one replaces it (so a work address is updated, not duplicated); others are appended.
 */
export function mergeByType(existing: unknown, incoming: Json[]): Json[] {
  const result = Array.isArray(existing) ? (existing.filter(isObject) as Json[]).slice() : [];
  for (const entry of incoming) {
    const index =
      typeof entry.type === 'string'
        ? result.findIndex((e) => sameText(e.type, entry.type as string))
        : -1;
    if (index >= 0) result[index] = { ...result[index], ...entry };
    else result.push(entry);
  }
  return result;
}

/** Applies one path operation to `target` (an object holding the attribute). */
export function applyToContainer(
  target: Json,
  key: string,
  path: ParsedPath,
  op: PatchKind,
  value: unknown,
  multiValued: boolean,
): void {
  const current = target[key];
  if (path.valueFilter) {
    if (!multiValued) throw badRequest(`Invalid path: ${path.attribute}`, 'invalidPath');
    const { attribute, value: wanted } = path.valueFilter;
    const entries = Array.isArray(current) ? (current.filter(isObject) as Json[]) : [];
    const matching = entries.filter((e) => sameText(e[attribute], wanted));
    if (op === 'remove') {
      target[key] = path.sub
        ? entries.map((e) => {
            if (!matching.includes(e)) return e;
            const { [path.sub!]: _removed, ...kept } = e;
            return kept;
          })
        : entries.filter((e) => !matching.includes(e));
      return;
    }
    const patchEntry = (e: Json): Json =>
      path.sub ? { ...e, [path.sub]: value } : { ...e, ...(isObject(value) ? value : {}) };
    if (matching.length === 0) {
      target[key] = [...entries, patchEntry({ [attribute]: wanted })];
    } else {
      target[key] = entries.map((e) => (matching.includes(e) ? patchEntry(e) : e));
    }
    return;
  }
  if (path.sub) {
    if (multiValued) throw badRequest(`Invalid path: ${path.attribute}.${path.sub}`, 'invalidPath');
    const complex = isObject(current) ? { ...current } : {};
    if (op === 'remove') delete complex[path.sub];
    else complex[path.sub] = value;
    target[key] = complex;
    return;
  }
  if (op === 'remove') {
    delete target[key];
  } else if (multiValued && op === 'add') {
    target[key] = mergeByType(current, (Array.isArray(value) ? value : [value]).filter(isObject));
  } else if (isObject(value) && isObject(current) && op === 'add') {
    target[key] = { ...current, ...value };
  } else {
    target[key] = value;
  }
}
