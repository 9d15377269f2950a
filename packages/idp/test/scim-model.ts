import type { TestIdp } from './helpers.js';

/**
 * A SCIM client that builds its models from /Schemas and /ResourceTypes the way
 * model-building client libraries do (types, referenceTypes, sub-attributes, mutability), and
 * checks resources against them (RFC 7643 §2, §7).
 */

type Json = Record<string, unknown>;

const TYPES = ['string', 'boolean', 'decimal', 'integer', 'dateTime', 'binary', 'reference'];
const MUTABILITY = ['readOnly', 'readWrite', 'immutable', 'writeOnly'];
const RETURNED = ['always', 'never', 'default', 'request'];
const UNIQUENESS = ['none', 'server', 'global'];

export type Attribute = {
  name: string;
  type: string;
  multiValued: boolean;
  required: boolean;
  caseExact: boolean;
  mutability: string;
  returned: string;
  uniqueness: string;
  referenceTypes?: string[];
  canonicalValues?: string[];
  subAttributes?: Map<string, Attribute>;
};

/** Attributes by lower-cased name, as RFC 7643 §2.1 makes names case-insensitive. */
export type Model = Map<string, Attribute>;

/** Builds one attribute, throwing (as such libraries do) on any missing characteristic. */
function buildAttribute(raw: Json, where: string, isSub: boolean): Attribute {
  const fail = (why: string) => {
    throw new Error(`${where}: ${why}`);
  };
  if (typeof raw.name !== 'string') fail('no name');
  const type = raw.type as string;
  if (!TYPES.includes(type) && !(type === 'complex' && !isSub)) fail(`bad type ${type}`);
  for (const flag of ['multiValued', 'required', 'caseExact']) {
    if (typeof raw[flag] !== 'boolean') fail(`no ${flag}`);
  }
  if (!MUTABILITY.includes(raw.mutability as string)) fail('bad mutability');
  if (!RETURNED.includes(raw.returned as string)) fail('bad returned');
  if (!UNIQUENESS.includes(raw.uniqueness as string)) fail('bad uniqueness');
  const attribute: Attribute = {
    name: raw.name as string,
    type,
    multiValued: raw.multiValued as boolean,
    required: raw.required as boolean,
    caseExact: raw.caseExact as boolean,
    mutability: raw.mutability as string,
    returned: raw.returned as string,
    uniqueness: raw.uniqueness as string,
  };
  if (type === 'reference') {
    const refs = raw.referenceTypes;
    // RFC 7643 §2.3.7 / §7: a reference names the resource types it may point at.
    if (!Array.isArray(refs) || refs.length === 0) fail('reference without referenceTypes');
    attribute.referenceTypes = refs as string[];
  }
  if (raw.canonicalValues !== undefined) {
    if (!Array.isArray(raw.canonicalValues)) fail('canonicalValues is not an array');
    attribute.canonicalValues = raw.canonicalValues as string[];
  }
  if (type === 'complex') {
    const subs = raw.subAttributes;
    if (!Array.isArray(subs) || subs.length === 0) fail('complex without subAttributes');
    attribute.subAttributes = new Map(
      (subs as Json[]).map((s) => [
        String(s.name).toLowerCase(),
        buildAttribute(s, `${where}.${String(s.name)}`, true),
      ]),
    );
  }
  return attribute;
}

export function buildModel(schema: Json): Model {
  return new Map(
    (schema.attributes as Json[]).map((a) => [
      String(a.name).toLowerCase(),
      buildAttribute(a, `${String(schema.id)}:${String(a.name)}`, false),
    ]),
  );
}

/** Checks one attribute value against its definition; returns the problems found. */
function valueProblems(attribute: Attribute, value: unknown, where: string): string[] {
  if (attribute.returned === 'never') return [`${where} is returned although returned=never`];
  if (attribute.multiValued) {
    if (!Array.isArray(value)) return [`${where} must be an array`];
    return value.flatMap((v, i) => singleProblems(attribute, v, `${where}[${i}]`));
  }
  return singleProblems(attribute, value, where);
}

function singleProblems(attribute: Attribute, value: unknown, where: string): string[] {
  switch (attribute.type) {
    case 'complex': {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        return [`${where} must be an object`];
      }
      return Object.entries(value as Json).flatMap(([key, v]) => {
        const sub = attribute.subAttributes!.get(key.toLowerCase());
        return sub ? valueProblems(sub, v, `${where}.${key}`) : [`${where}.${key} not advertised`];
      });
    }
    case 'boolean':
      return typeof value === 'boolean' ? [] : [`${where} must be a boolean`];
    case 'integer':
      return Number.isInteger(value) ? [] : [`${where} must be an integer`];
    case 'dateTime':
      return typeof value === 'string' && !Number.isNaN(Date.parse(value))
        ? []
        : [`${where} must be a dateTime`];
    default:
      return typeof value === 'string' ? [] : [`${where} must be a string`];
  }
}

/** Every problem of one resource against its resource type's schema and extensions. */
export function resourceProblems(models: Map<string, Model>, type: Json, resource: Json): string[] {
  const core = models.get(String(type.schema))!;
  const extensions = ((type.schemaExtensions as Json[] | undefined) ?? []).map((e) =>
    String(e.schema),
  );
  const problems: string[] = [];
  for (const [key, value] of Object.entries(resource)) {
    if (key === 'schemas' || key === 'meta') continue;
    const extension = extensions.find((urn) => urn.toLowerCase() === key.toLowerCase());
    if (extension) {
      for (const [name, v] of Object.entries(value as Json)) {
        const attribute = models.get(extension)!.get(name.toLowerCase());
        if (attribute) problems.push(...valueProblems(attribute, v, `${extension}:${name}`));
        else problems.push(`${extension}:${name} not advertised`);
      }
      continue;
    }
    const attribute = core.get(key.toLowerCase());
    if (attribute) problems.push(...valueProblems(attribute, value, key));
    else problems.push(`${key} not advertised`);
  }
  for (const attribute of core.values()) {
    if (attribute.returned === 'always' && !(attribute.name in resource)) {
      problems.push(`${attribute.name} is returned=always but missing`);
    }
  }
  return problems;
}

/** The models of a running IdP, and the problems of a resource of a named type against them. */
export async function modelClient(idp: TestIdp) {
  const schemas = (await idp.scim('GET', '/Schemas')).body.Resources as Json[];
  const resourceTypes = (await idp.scim('GET', '/ResourceTypes', { token: '' })).body
    .Resources as Json[];
  const models = new Map(schemas.map((s) => [String(s.id), buildModel(s)]));
  const typeOf = (name: string) => resourceTypes.find((t) => t.name === name)!;
  const problems = (typeName: string, resource: Json) =>
    resourceProblems(models, typeOf(typeName), resource);
  /** `idp.scim`, with every User and Group in a response (alone, or a list's) checked. */
  const scim: TestIdp['scim'] = async (method, path, options) => {
    const response = await idp.scim(method, path, options);
    const body = response.body;
    const resources = Array.isArray(body.Resources) ? (body.Resources as Json[]) : [body];
    const found = resources.flatMap((resource) => {
      const type = (resource.meta as Json | undefined)?.resourceType;
      return type === 'User' || type === 'Group' ? problems(type, resource) : [];
    });
    if (found.length > 0) throw new Error(`${method} ${path}: ${found.join('; ')}`);
    return response;
  };
  return { schemas, resourceTypes, models, problems, scim };
}
