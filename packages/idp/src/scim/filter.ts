import { type Filter, parse } from 'scim2-parse-filter';
import { ScimError } from './errors.js';

export type FilterOperator = 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'ge' | 'le' | 'gt' | 'lt' | 'pr';

/** One comparison of a filter that is a conjunction of comparisons. */
export type Condition = { attribute: string; op: FilterOperator; value: string };

/** What an endpoint accepts and the errors it answers with when a filter goes beyond it. */
export type FilterPolicy = {
  operators: ReadonlySet<FilterOperator>;
  /** `and`: conjunctions allowed; `single`: one comparison only. */
  logic: 'and' | 'single';
  /** Canonical attribute key, or undefined when the endpoint does not know the attribute. */
  resolve(attribute: string): string | undefined;
  unsupportedOperator(op: string): ScimError;
  unsupportedLogic(op: string): ScimError;
  unknownAttribute(attribute: string): ScimError;
};

export const UNSUPPORTED_FILTER = () =>
  new ScimError(400, 'Given filter operator is not supported.', 'InvalidFilter');

export const UNKNOWN_FILTER_ATTRIBUTE = () =>
  new ScimError(400, 'Not a valid attribute name/uri', 'invalidValue');

const COMPARISON = /^(eq|ne|co|sw|ew|gt|ge|lt|le)$/i;

/**
 * WSO2 accepts bare and single-quoted values (`userName sw ki`); the parser only takes JSON
 * literals. Re-emit every comparison value as a JSON string, so values are always compared
 * as text, as WSO2's claim store does.
 */
function quoteValues(text: string): string {
  const tokens = text.match(/"(?:[^"\\]|\\.)*"|'[^']*'|[()[\]]|[^\s()[\]]+/g) ?? [];
  const out: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    const previous = tokens[i - 1];
    const isValue = previous !== undefined && COMPARISON.test(previous) && i >= 2;
    if (!isValue) {
      out.push(token);
    } else if (token.startsWith('"')) {
      out.push(JSON.stringify(String(JSON.parse(token))));
    } else if (token.startsWith("'")) {
      out.push(JSON.stringify(token.slice(1, -1)));
    } else {
      out.push(JSON.stringify(token));
    }
  }
  return out.join(' ');
}

function parseOrReject(text: string): Filter {
  if (!text.trim()) throw UNSUPPORTED_FILTER();
  try {
    return parse(quoteValues(text));
  } catch {
    throw UNSUPPORTED_FILTER();
  }
}

/** Parses `text` under `policy` into the list of comparisons that must all hold. */
export function parseFilter(text: string, policy: FilterPolicy): Condition[] {
  const ast = parseOrReject(text);
  if (policy.logic === 'single' && (ast.op === 'and' || ast.op === 'or')) {
    throw policy.unsupportedLogic(ast.op);
  }
  const conditions: Condition[] = [];
  const walk = (node: Filter): void => {
    switch (node.op) {
      case 'and':
        for (const child of node.filters) walk(child);
        return;
      case 'or':
      case 'not':
        throw policy.unsupportedLogic(node.op);
      case '[]':
        throw UNSUPPORTED_FILTER();
      default: {
        const op = node.op.toLowerCase() as FilterOperator;
        if (!policy.operators.has(op)) throw policy.unsupportedOperator(op);
        const attribute = policy.resolve(node.attrPath);
        if (attribute === undefined) throw policy.unknownAttribute(node.attrPath);
        const value = 'compValue' in node ? String(node.compValue ?? '') : '';
        conditions.push({ attribute, op, value });
      }
    }
  };
  walk(ast);
  return conditions;
}

/** Case-insensitive text comparison, as WSO2's default (JDBC) user store does. */
export function matches(condition: Condition, candidates: readonly string[]): boolean {
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
