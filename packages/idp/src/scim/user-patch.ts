import { isJsonObject, type JsonObject } from '@mcp-identity/common';
import { badRequest } from './errors.js';
import { entryMatches, parseFilter, valueFilterPolicy } from './filter.js';
import {
  applyToContainer,
  type EntrySelector,
  equalitySeed,
  mergeByType,
  type ParsedPath,
  type PatchOperation,
  parsePath,
} from './patch.js';
import { type AttributeSpec, CORE_USER, type UserSchema } from './user-schema.js';

/**
 * PATCH (RFC 7644 §3.5.2) of a stored user or agent document, against the user schema of the
 * moment: what each operation means for the core, enterprise, WSO2 and custom attributes.
 * Storage and the transaction around it stay with `UserStore`.
 */

/** Applies a PATCH request's operations, in order, to `doc` in place; returns a new password if one is set. */
export function applyUserPatch(
  doc: JsonObject,
  operations: readonly PatchOperation[],
  schema: UserSchema,
): string | undefined {
  let password: string | undefined;
  for (const operation of operations) {
    password = applyUserOperation(doc, operation, schema) ?? password;
  }
  return password;
}

/** Applies one PATCH operation to a stored document; returns a new password if set. */
function applyUserOperation(
  doc: JsonObject,
  { op, path, value: given }: PatchOperation,
  schema: UserSchema,
): string | undefined {
  const value = withoutSchemas(given);
  if (!path) {
    if (!isJsonObject(value)) throw badRequest('Value of a pathless operation must be an object.');
    let password: string | undefined;
    for (const [key, v] of Object.entries(value)) {
      const spec = schema.coreAttribute(key);
      if (!spec) {
        // Entra sends paths as keys: `name.givenName`, `urn:…:User:department`.
        const set = applyUserOperation(doc, { op, path: key, value: v }, schema);
        password = set ?? password;
      } else if (spec.name === 'password') {
        password = String(v);
      } else if (spec.multiValued && Array.isArray(v)) {
        doc[spec.name] = mergeByType(doc[spec.name], v.filter(isJsonObject));
      } else if (spec.type === 'complex' && isJsonObject(v) && isJsonObject(doc[spec.name])) {
        doc[spec.name] = { ...(doc[spec.name] as JsonObject), ...v };
      } else {
        doc[spec.name] = v;
      }
    }
    return password;
  }
  const wholeExtension = schema.extensionUrn(path);
  if (wholeExtension) {
    if (op === 'remove') delete doc[wholeExtension];
    else if (!isJsonObject(value)) throw badRequest(`Attribute ${wholeExtension} must be complex.`);
    else if (isJsonObject(doc[wholeExtension])) {
      doc[wholeExtension] = { ...(doc[wholeExtension] as JsonObject), ...value };
    } else doc[wholeExtension] = value;
    return undefined;
  }
  const corePrefix = `${CORE_USER}:`;
  const relative = path.toLowerCase().startsWith(corePrefix.toLowerCase())
    ? path.slice(corePrefix.length)
    : path;
  const parsed = qualified(parsePath(relative, [...schema.extensions.keys()]), schema);
  let spec: AttributeSpec | undefined;
  let container = doc;
  if (parsed.urn) {
    spec = schema.extensionAttribute(parsed.urn, parsed.attribute);
    if (!spec)
      throw badRequest(`No such attribute with the name : ${parsed.urn}:${parsed.attribute}`);
    container = isJsonObject(doc[parsed.urn]) ? { ...(doc[parsed.urn] as JsonObject) } : {};
    doc[parsed.urn] = container;
  } else {
    spec = schema.coreAttribute(parsed.attribute);
    if (!spec) throw badRequest(`No such attribute with the name : ${parsed.attribute}`);
    if (spec.readOnly) throw badRequest(`Attribute ${spec.name} is read only.`, 'mutability');
    if (spec.name === 'password') {
      if (op === 'remove') throw badRequest('Attribute password cannot be removed.');
      return String(value);
    }
  }
  const sub = parsed.sub === undefined ? undefined : subAttributeName(spec, parsed.sub);
  const selector = parsed.filter === undefined ? undefined : entrySelector(spec, parsed.filter);
  applyToContainer(
    container,
    spec.name,
    { ...(selector ? { selector } : {}), ...(sub ? { sub } : {}) },
    op,
    value,
    spec.multiValued === true,
  );
  return undefined;
}

/**
 * An unqualified path names a core attribute, else the extension attribute of that name (RFC
 * 7644 §3.10: paths are relative to the resource's schemas), as in Entra's `path: "manager"`.
 */
function qualified(parsed: ParsedPath, schema: UserSchema): ParsedPath {
  if (parsed.urn || schema.coreAttribute(parsed.attribute)) return parsed;
  const urn = [...schema.extensions.keys()].find((u) =>
    schema.extensionAttribute(u, parsed.attribute),
  );
  return urn ? { ...parsed, urn } : parsed;
}

/** A value object's `schemas` key only restates the resource's schemas; some clients send it. */
function withoutSchemas(value: unknown): unknown {
  if (!isJsonObject(value)) return value;
  return Object.fromEntries(Object.entries(value).filter(([k]) => k.toLowerCase() !== 'schemas'));
}

function subAttributeName(spec: AttributeSpec, sub: string): string {
  const name = spec.subAttributes?.find((s) => s.toLowerCase() === sub.toLowerCase());
  if (!name)
    throw badRequest(`No such attribute with the name : ${spec.name}.${sub}`, 'invalidPath');
  return name;
}

/** The entries of `spec` (multi-valued) that a PATCH path's value filter selects. */
function entrySelector(spec: AttributeSpec, text: string): EntrySelector {
  const tree = parseFilter(
    text,
    valueFilterPolicy(
      (sub) => `${spec.name}.${subAttributeName(spec, sub)}`,
      (a) => badRequest(`No such attribute with the name : ${a}`, 'invalidPath'),
    ),
  );
  const seed = equalitySeed(tree, spec.name);
  return {
    matches: (entry) => entryMatches(tree, spec.name, entry),
    ...(seed ? { seed } : {}),
  };
}
