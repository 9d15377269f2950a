import { isJsonObject, type JsonObject } from '@mcp-identity/common';
import { badRequest } from './errors.js';
import {
  entryMatches,
  parseFilter,
  UNKNOWN_FILTER_ATTRIBUTE,
  valueFilterPolicy,
} from './filter.js';

/** `attributes` / `excludedAttributes` of a request (RFC 7644 §3.4.2.5, §3.9). */
export type Projection = { attributes?: string[]; excludedAttributes?: string[] };

/** Returned whatever the request asks for (RFC 7643 §3.1 `returned: always`). */
const ALWAYS = new Set(['id', 'schemas']);
const MAX_NAMES = 100;

/**
 * Reads `attributes`/`excludedAttributes` as given in a query string (comma-separated) or a
 * `.search` body (an array of names, or a comma-separated string).
 */
export function readProjection(attributes: unknown, excludedAttributes: unknown): Projection {
  const names = (value: unknown, label: string): string[] | undefined => {
    if (value === undefined || value === null) return undefined;
    const parts = Array.isArray(value) ? value : [value];
    if (!parts.every((p) => typeof p === 'string')) {
      throw badRequest(`${label} must be a list of attribute names.`, 'invalidSyntax');
    }
    const list = (parts as string[])
      .flatMap((p) => p.split(','))
      .map((p) => p.trim())
      .filter(Boolean);
    if (list.length > MAX_NAMES) {
      throw badRequest(`${label} may name at most ${MAX_NAMES} attributes.`, 'invalidSyntax');
    }
    return list.length ? list : undefined;
  };
  const projection: Projection = {};
  const included = names(attributes, 'attributes');
  const excluded = names(excludedAttributes, 'excludedAttributes');
  if (included) projection.attributes = included;
  if (excluded) projection.excludedAttributes = excluded;
  return projection;
}

/** `[top-level key, sub-attribute?]` of `name` in `resource`, matched case-insensitively. */
function locate(resource: JsonObject, name: string): [string, string | undefined] | undefined {
  const keys = Object.keys(resource);
  const schemas = Array.isArray(resource.schemas) ? (resource.schemas as string[]) : [];
  let path = name;
  const lower = name.toLowerCase();
  // URN-qualified: an extension object (`urn:…:User` or `urn:…:User:attr.sub`) or a core name.
  for (const urn of schemas) {
    const u = urn.toLowerCase();
    if (lower === u) {
      const key = keys.find((k) => k.toLowerCase() === u);
      return key ? [key, undefined] : undefined;
    }
    if (lower.startsWith(`${u}:`)) {
      const rest = name.slice(urn.length + 1);
      const extension = keys.find((k) => k.toLowerCase() === u);
      if (extension) return [extension, rest];
      path = rest;
      break;
    }
  }
  const [top, ...sub] = path.split('.');
  const key = keys.find((k) => k.toLowerCase() === top!.toLowerCase());
  return key ? [key, sub.length ? sub.join('.') : undefined] : undefined;
}

function pick(value: unknown, sub: string): unknown {
  const [head, ...rest] = sub.split('.');
  const take = (object: JsonObject): JsonObject | undefined => {
    const key = Object.keys(object).find((k) => k.toLowerCase() === head!.toLowerCase());
    if (key === undefined) return undefined;
    const inner = rest.length ? pick(object[key], rest.join('.')) : object[key];
    return inner === undefined ? undefined : { [key]: inner };
  };
  if (Array.isArray(value)) {
    const entries = value.filter(isJsonObject).map((e) => take(e) ?? {});
    return entries.some((e) => Object.keys(e).length) ? entries : undefined;
  }
  return isJsonObject(value) ? take(value) : undefined;
}

function merge(into: unknown, part: unknown): unknown {
  if (Array.isArray(into) && Array.isArray(part)) {
    return into.map((e, i) => merge(e, part[i]));
  }
  if (isJsonObject(into) && isJsonObject(part)) {
    const out: JsonObject = { ...into };
    for (const [k, v] of Object.entries(part)) out[k] = k in out ? merge(out[k], v) : v;
    return out;
  }
  return part ?? into;
}

function drop(value: unknown, sub: string): unknown {
  const [head, ...rest] = sub.split('.');
  const without = (object: JsonObject): JsonObject => {
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(object)) {
      if (k.toLowerCase() !== head!.toLowerCase()) out[k] = v;
      else if (rest.length) out[k] = drop(v, rest.join('.'));
    }
    return out;
  };
  if (Array.isArray(value)) return value.map((e) => (isJsonObject(e) ? without(e) : e));
  return isJsonObject(value) ? without(value) : value;
}

/** `emails[type eq "work"]` or `emails[type eq "work"].value`: a value filter (RFC 7644 §3.10). */
const VALUE_PATH = /^([^[\]]+)\[(.+)\](?:\.([^.[\]]+))?$/s;

/** The entries of a multi-valued attribute a value filter selects, optionally one sub-attribute. */
function selectEntries(value: unknown, filter: string, sub: string | undefined): unknown {
  if (!Array.isArray(value)) return undefined;
  const entries = value.filter(isJsonObject);
  // Sub-attribute names match in any case; rendered entries carry the schema's case.
  const keyOf = (name: string) =>
    entries.flatMap(Object.keys).find((k) => k.toLowerCase() === name.toLowerCase()) ?? name;
  const tree = parseFilter(
    filter,
    valueFilterPolicy((name) => `entry.${keyOf(name)}`, UNKNOWN_FILTER_ATTRIBUTE),
  );
  const selected = entries.filter((e) => entryMatches(tree, 'entry', e));
  if (selected.length === 0) return undefined;
  return sub === undefined ? selected : pick(selected, sub);
}

/** The part of `resource` that one `attributes` name asks for, as `{key: value}`, if any. */
function requested(resource: JsonObject, name: string): JsonObject | undefined {
  const valuePath = VALUE_PATH.exec(name);
  const found = locate(resource, valuePath ? valuePath[1]! : name);
  if (!found) return undefined;
  const [key, sub] = found;
  // Value filters apply to the multi-valued attributes, all of them top-level core ones.
  if (valuePath && sub !== undefined) return undefined;
  const value = valuePath
    ? selectEntries(resource[key], valuePath[2]!, valuePath[3])
    : sub === undefined
      ? resource[key]
      : pick(resource[key], sub);
  return value === undefined ? undefined : { [key]: value };
}

/** Applies a projection to one rendered resource; `id` and `schemas` always stay. */
export function project(resource: JsonObject, projection: Projection): JsonObject {
  let out = resource;
  if (projection.attributes) {
    let kept: JsonObject = {};
    for (const key of Object.keys(resource)) {
      if (ALWAYS.has(key)) kept[key] = resource[key];
    }
    for (const name of projection.attributes) {
      const part = requested(resource, name);
      if (part) kept = merge(kept, part) as JsonObject;
    }
    out = kept;
  }
  for (const name of projection.excludedAttributes ?? []) {
    const found = locate(out, name);
    if (!found || ALWAYS.has(found[0])) continue;
    const [key, sub] = found;
    if (sub === undefined) {
      const { [key]: _removed, ...rest } = out;
      out = rest;
    } else {
      out = { ...out, [key]: drop(out[key], sub) };
    }
  }
  return out;
}

function isProjecting(projection: Projection): boolean {
  return projection.attributes !== undefined || projection.excludedAttributes !== undefined;
}

/** Projects a single resource or every resource of a list response. */
export function projectBody(
  body: JsonObject | undefined,
  projection: Projection,
): JsonObject | undefined {
  if (!body || !isProjecting(projection)) return body;
  if (Array.isArray(body.Resources)) {
    return {
      ...body,
      Resources: (body.Resources as JsonObject[]).map((r) => project(r, projection)),
    };
  }
  return project(body, projection);
}
