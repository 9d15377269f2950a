import { addBounded } from '@mcp-identity/common';
import { type Filter, parse } from 'scim2-parse-filter';
import { ScimError } from './errors.js';

export type FilterOperator = 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'ge' | 'le' | 'gt' | 'lt' | 'pr';
export type FilterLogic = 'and' | 'or' | 'not';

/** One comparison; `attribute` is the endpoint's canonical key (`emails.type`, `meta.created`). */
export type Comparison = { op: FilterOperator; attribute: string; value: string };

/**
 * A parsed filter (RFC 7644 §3.4.2.2). A value filter `emails[type eq "work"]` holds
 * comparisons whose keys are under its attribute (`emails.type`); they must all hold for one
 * and the same entry.
 */
export type FilterTree =
  | Comparison
  | { op: 'and' | 'or'; filters: FilterTree[] }
  | { op: 'not'; filter: FilterTree }
  | { op: '[]'; attribute: string; filter: FilterTree };

/** What an endpoint accepts and the errors it answers with when a filter goes beyond it. */
export type FilterPolicy = {
  operators: ReadonlySet<FilterOperator>;
  logic: ReadonlySet<FilterLogic>;
  /** Canonical attribute key, or undefined when the endpoint does not know the attribute. */
  resolve(attribute: string): string | undefined;
  /**
   * For `attr[...]`: the canonical multi-valued attribute and the resolver of its
   * sub-attributes (returning full keys); undefined when the endpoint has no such attribute.
   */
  valuePath?(
    attribute: string,
  ): { attribute: string; resolve(sub: string): string | undefined } | undefined;
  unsupportedOperator(op: string): ScimError;
  unsupportedLogic(op: string): ScimError;
  unknownAttribute(attribute: string): ScimError;
};

/** RFC 7644 §3.4.2.2: every operator and logical combination. */
export const ALL_OPERATORS: ReadonlySet<FilterOperator> = new Set<FilterOperator>([
  'eq',
  'ne',
  'co',
  'sw',
  'ew',
  'gt',
  'ge',
  'lt',
  'le',
  'pr',
]);
export const ALL_LOGIC: ReadonlySet<FilterLogic> = new Set<FilterLogic>(['and', 'or', 'not']);

/** The policy of a PATCH path's value filter (`emails[type eq "work"]`): anything RFC 7644 allows. */
export function valueFilterPolicy(
  resolve: (sub: string) => string | undefined,
  unknownAttribute: (attribute: string) => ScimError,
): FilterPolicy {
  return {
    operators: ALL_OPERATORS,
    logic: ALL_LOGIC,
    resolve,
    unsupportedOperator: () => UNSUPPORTED_FILTER(),
    unsupportedLogic: () => UNSUPPORTED_FILTER(),
    unknownAttribute,
  };
}

export const UNSUPPORTED_FILTER = () =>
  new ScimError(400, 'Given filter operator is not supported.', 'InvalidFilter');

export const UNKNOWN_FILTER_ATTRIBUTE = () =>
  new ScimError(400, 'Not a valid attribute name/uri', 'invalidValue');

/** Bounds on what one filter may ask for, so a filter's cost stays small and predictable. */
export const MAX_FILTER_LENGTH = 10_000;
export const MAX_FILTER_COMPARISONS = 100;
export const MAX_FILTER_DEPTH = 16;

const COMPARISON = /^(eq|ne|co|sw|ew|gt|ge|lt|le)$/i;
const TOKEN = /"(?:[^"\\]|\\.)*"|'[^']*'|[()[\]]|[^\s()[\]]+/g;

const tooComplex = () =>
  new ScimError(
    400,
    `The filter is too complex: at most ${MAX_FILTER_COMPARISONS} comparisons, ${MAX_FILTER_DEPTH} levels of nesting and ${MAX_FILTER_LENGTH} characters are supported.`,
    'InvalidFilter',
  );

/**
 * WSO2 accepts bare and single-quoted values (`userName sw ki`); the parser only takes JSON
 * literals. Re-emit every comparison value as a JSON string, so values are always compared
 * as text, as WSO2's claim store does. Also enforces the size bounds before parsing.
 */
function quoteValues(text: string): string {
  if (text.length > MAX_FILTER_LENGTH) throw tooComplex();
  const tokens = text.match(TOKEN) ?? [];
  const out: string[] = [];
  let comparisons = 0;
  let depth = 0;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token === '(' || token === '[') depth++;
    else if (token === ')' || token === ']') depth--;
    if (depth > MAX_FILTER_DEPTH) throw tooComplex();
    const previous = tokens[i - 1];
    if (COMPARISON.test(token) || token.toLowerCase() === 'pr') comparisons++;
    if (comparisons > MAX_FILTER_COMPARISONS) throw tooComplex();
    const isValue = previous !== undefined && COMPARISON.test(previous) && i >= 2;
    if (!isValue) {
      out.push(token);
    } else if (/^"(?:[^"\\]|\\.)*"$/.test(token)) {
      out.push(JSON.stringify(readJsonString(token)));
    } else if (/^'[^']*'$/.test(token)) {
      out.push(JSON.stringify(token.slice(1, -1)));
    } else {
      out.push(JSON.stringify(token));
    }
  }
  return out.join(' ');
}

function readJsonString(token: string): string {
  try {
    return String(JSON.parse(token));
  } catch {
    throw UNSUPPORTED_FILTER();
  }
}

/** Filters parsed lately (tools send the same few again and again), oldest first. */
const PARSED_KEPT = 256;
const parsed = new Map<string, Filter>();

/** The syntax tree of `text`; it depends on the text alone and is only ever read. */
function parseOrReject(text: string): Filter {
  const known = parsed.get(text);
  if (known) return known;
  if (!text.trim()) throw UNSUPPORTED_FILTER();
  const quoted = quoteValues(text);
  let filter: Filter;
  try {
    filter = parse(quoted);
  } catch {
    throw UNSUPPORTED_FILTER();
  }
  addBounded(parsed, text, filter, PARSED_KEPT);
  return filter;
}

/** Parses `text` under `policy`; every attribute is resolved to its canonical key. */
export function parseFilter(text: string, policy: FilterPolicy): FilterTree {
  const convert = (
    node: Filter,
    resolve: (attribute: string) => string | undefined,
    inValuePath: boolean,
  ): FilterTree => {
    switch (node.op) {
      case 'and':
      case 'or':
        if (!policy.logic.has(node.op)) throw policy.unsupportedLogic(node.op);
        return { op: node.op, filters: node.filters.map((f) => convert(f, resolve, inValuePath)) };
      case 'not':
        if (!policy.logic.has('not')) throw policy.unsupportedLogic('not');
        return { op: 'not', filter: convert(node.filter, resolve, inValuePath) };
      case '[]': {
        const path = inValuePath ? undefined : policy.valuePath?.(node.attrPath);
        if (!path) throw UNSUPPORTED_FILTER();
        return {
          op: '[]',
          attribute: path.attribute,
          filter: convert(node.valFilter, path.resolve, true),
        };
      }
      default: {
        const op = node.op.toLowerCase() as FilterOperator;
        if (!policy.operators.has(op)) throw policy.unsupportedOperator(op);
        const attribute = resolve(node.attrPath);
        if (attribute === undefined) throw policy.unknownAttribute(node.attrPath);
        const raw = 'compValue' in node ? String(node.compValue ?? '') : '';
        return { op, attribute, value: attribute.startsWith('meta.') ? isoDate(op, raw) : raw };
      }
    }
  };
  return convert(parseOrReject(text), (a) => policy.resolve(a), false);
}

/** Timestamps are stored as ISO 8601 in UTC; order comparisons need the same form. */
function isoDate(op: FilterOperator, value: string): string {
  if (op === 'co' || op === 'sw' || op === 'ew' || op === 'pr') return value;
  const time = Date.parse(value);
  if (Number.isNaN(time)) {
    throw new ScimError(400, `Not a valid date and time: ${value}`, 'invalidValue');
  }
  return new Date(time).toISOString();
}

/** The values a resource has for a canonical key, and the entries of a multi-valued one. */
export type FilterSubject = {
  values(attribute: string): readonly string[];
  entries(attribute: string): readonly Record<string, unknown>[];
};

/** Evaluates `tree` against one resource (groups, roles, value filters, the scan baseline). */
export function evaluate(tree: FilterTree, subject: FilterSubject): boolean {
  switch (tree.op) {
    case 'and':
      return tree.filters.every((f) => evaluate(f, subject));
    case 'or':
      return tree.filters.some((f) => evaluate(f, subject));
    case 'not':
      return !evaluate(tree.filter, subject);
    case '[]':
      return subject
        .entries(tree.attribute)
        .some((entry) => evaluate(tree.filter, entrySubject(tree.attribute, entry)));
    default:
      return matches(tree, subject.values(tree.attribute));
  }
}

/** Whether one entry of the multi-valued `attribute` satisfies a value filter's tree. */
export function entryMatches(
  tree: FilterTree,
  attribute: string,
  entry: Record<string, unknown>,
): boolean {
  return evaluate(tree, entrySubject(attribute, entry));
}

function entrySubject(attribute: string, entry: Record<string, unknown>): FilterSubject {
  return {
    values: (key) => textValues(entry[key.slice(attribute.length + 1)]),
    entries: () => [],
  };
}

/** The text form of a primitive attribute value (empty for absent or complex values). */
export function textValues(value: unknown): string[] {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
    ? [String(value)]
    : [];
}

/** Whether a tree has a value filter (which an attribute index cannot answer exactly). */
export function hasValueFilter(tree: FilterTree): boolean {
  switch (tree.op) {
    case 'and':
    case 'or':
      return tree.filters.some(hasValueFilter);
    case 'not':
      return hasValueFilter(tree.filter);
    case '[]':
      return true;
    default:
      return false;
  }
}

/** Case-insensitive text comparison, as WSO2's default (JDBC) user store does. */
export function matches(condition: Comparison, candidates: readonly string[]): boolean {
  const value = condition.value.toLowerCase();
  const test = (raw: string): boolean => {
    const v = raw.toLowerCase();
    switch (condition.op) {
      case 'eq':
        return v === value;
      case 'ne':
        return v !== value;
      case 'co':
        return v.includes(value);
      case 'sw':
        return v.startsWith(value);
      case 'ew':
        return v.endsWith(value);
      case 'ge':
        return v >= value;
      case 'le':
        return v <= value;
      case 'gt':
        return v > value;
      case 'lt':
        return v < value;
      case 'pr':
        return true;
    }
  };
  if (condition.op === 'ne') return candidates.every(test);
  return candidates.some(test);
}
