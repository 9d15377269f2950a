/**
 * Arazzo "simple" criterion conditions: a tokenizer and recursive-descent parser producing an
 * AST that is evaluated directly — no eval, no textual substitution of values.
 *
 * Literals: true, false, null, numbers, 'single-quoted' strings ('' escapes a quote; "double"
 * quotes are accepted too). Operators: ! && || == != < <= > >= ( ) and [index] on a value.
 * String comparisons are case-insensitive (Arazzo 1.0.1); numeric strings compare as numbers
 * against numbers; null only equals null.
 */
import { McpIdentityError } from '@mcp-identity/common';
import {
  type ExpressionScope,
  evaluateExpression,
  parseExpression,
  parseTemplate,
  type RuntimeExpression,
  renderTemplate,
  type TemplatePart,
} from './expression.js';

export class ConditionSyntaxError extends McpIdentityError {
  readonly code = 'ERR_ARAZZO_CONDITION_SYNTAX';
}

type ComparisonOp = '==' | '!=' | '<' | '<=' | '>' | '>=';

export type ConditionNode =
  | { type: 'literal'; value: unknown }
  | { type: 'template'; parts: TemplatePart[] }
  | { type: 'expression'; expression: RuntimeExpression }
  | { type: 'not'; operand: ConditionNode }
  | { type: 'and' | 'or'; left: ConditionNode; right: ConditionNode }
  | { type: 'compare'; op: ComparisonOp; left: ConditionNode; right: ConditionNode }
  | { type: 'index'; target: ConditionNode; index: ConditionNode };

type Token =
  | { kind: 'op'; value: string; at: number }
  | { kind: 'node'; node: ConditionNode; at: number }
  | { kind: 'end'; at: number };

const OPERATORS = ['==', '!=', '<=', '>=', '&&', '||', '<', '>', '!', '(', ')', '[', ']'];
const EXPRESSION_END = /[\s=!<>&|()[\]]/;
const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/;

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const error = (why: string): never => {
    throw new ConditionSyntaxError(`invalid condition "${text}" at offset ${i}: ${why}`);
  };
  while (i < text.length) {
    const ch = text[i]!;
    if (/\s/.test(ch)) {
      i++;
      continue;
    }
    const at = i;
    const op = OPERATORS.find((candidate) => text.startsWith(candidate, i));
    if (op) {
      tokens.push({ kind: 'op', value: op, at });
      i += op.length;
      continue;
    }
    if (ch === "'" || ch === '"') {
      let value = '';
      i++;
      for (;;) {
        if (i >= text.length) error('unterminated string');
        if (text[i] === ch) {
          if (ch === "'" && text[i + 1] === "'") {
            value += "'";
            i += 2;
            continue;
          }
          i++;
          break;
        }
        value += text[i++];
      }
      const node: ConditionNode = value.includes('{$')
        ? { type: 'template', parts: parseTemplate(value) }
        : { type: 'literal', value };
      tokens.push({ kind: 'node', node, at });
      continue;
    }
    if (ch === '$') {
      let end = i + 1;
      while (end < text.length && !EXPRESSION_END.test(text[end]!)) end++;
      const source = text.slice(i, end);
      try {
        tokens.push({
          kind: 'node',
          node: { type: 'expression', expression: parseExpression(source) },
          at,
        });
      } catch (cause) {
        error((cause as Error).message);
      }
      i = end;
      continue;
    }
    const number = NUMBER.exec(text.slice(i));
    if (number) {
      tokens.push({ kind: 'node', node: { type: 'literal', value: Number(number[0]) }, at });
      i += number[0].length;
      continue;
    }
    const word = /^[A-Za-z_]\w*/.exec(text.slice(i))?.[0];
    if (word === 'true' || word === 'false' || word === 'null') {
      const value = word === 'null' ? null : word === 'true';
      tokens.push({ kind: 'node', node: { type: 'literal', value }, at });
      i += word.length;
      continue;
    }
    error(
      word
        ? `unexpected word "${word}" (quote string literals with single quotes)`
        : `unexpected character "${ch}"`,
    );
  }
  tokens.push({ kind: 'end', at: text.length });
  return tokens;
}

export function parseCondition(text: string): ConditionNode {
  const tokens = tokenize(text);
  let pos = 0;
  const peek = () => tokens[pos]!;
  const isOp = (value: string) => {
    const token = peek();
    return token.kind === 'op' && token.value === value;
  };
  const error = (why: string): never => {
    throw new ConditionSyntaxError(`invalid condition "${text}" at offset ${peek().at}: ${why}`);
  };
  const expect = (value: string) => {
    if (!isOp(value)) error(`expected "${value}"`);
    pos++;
  };

  const primary = (): ConditionNode => {
    const token = peek();
    if (token.kind === 'node') {
      pos++;
      return token.node;
    }
    if (isOp('(')) {
      pos++;
      const inner = or();
      expect(')');
      return inner;
    }
    return error(token.kind === 'end' ? 'unexpected end' : `unexpected "${token.value}"`);
  };
  const postfix = (): ConditionNode => {
    let node = primary();
    while (isOp('[')) {
      pos++;
      const index = or();
      expect(']');
      node = { type: 'index', target: node, index };
    }
    return node;
  };
  const comparison = (): ConditionNode => {
    const left = postfix();
    const token = peek();
    if (token.kind === 'op' && ['==', '!=', '<', '<=', '>', '>='].includes(token.value)) {
      pos++;
      return { type: 'compare', op: token.value as ComparisonOp, left, right: postfix() };
    }
    return left;
  };
  const unary = (): ConditionNode => {
    if (isOp('!')) {
      pos++;
      return { type: 'not', operand: unary() };
    }
    return comparison();
  };
  const and = (): ConditionNode => {
    let node = unary();
    while (isOp('&&')) {
      pos++;
      node = { type: 'and', left: node, right: unary() };
    }
    return node;
  };
  const or = (): ConditionNode => {
    let node = and();
    while (isOp('||')) {
      pos++;
      node = { type: 'or', left: node, right: and() };
    }
    return node;
  };

  const root = or();
  if (peek().kind !== 'end') error('unexpected trailing input');
  return root;
}

export function truthy(value: unknown): boolean {
  return !(value === undefined || value === null || value === false || value === 0 || value === '');
}

function asNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) {
    return Number(value);
  }
  return undefined;
}

function equal(a: unknown, b: unknown): boolean {
  if (a === null || b === null) return a === b;
  if (typeof a === 'string' && typeof b === 'string') return a.toLowerCase() === b.toLowerCase();
  if (typeof a === 'number' || typeof b === 'number') {
    const x = asNumber(a);
    const y = asNumber(b);
    return x !== undefined && y !== undefined && x === y;
  }
  if (typeof a === 'boolean' || typeof b === 'boolean') {
    return String(a).toLowerCase() === String(b).toLowerCase();
  }
  return JSON.stringify(a) === JSON.stringify(b);
}

function order(op: ComparisonOp, a: unknown, b: unknown): boolean {
  let x: number | string;
  let y: number | string;
  const na = asNumber(a);
  const nb = asNumber(b);
  if (na !== undefined && nb !== undefined) {
    x = na;
    y = nb;
  } else if (typeof a === 'string' && typeof b === 'string') {
    x = a.toLowerCase();
    y = b.toLowerCase();
  } else {
    return false;
  }
  if (op === '<') return x < y;
  if (op === '<=') return x <= y;
  if (op === '>') return x > y;
  return x >= y;
}

export function evaluateConditionNode(node: ConditionNode, scope: ExpressionScope): unknown {
  switch (node.type) {
    case 'literal':
      return node.value;
    case 'template':
      return renderTemplate(node.parts, scope);
    case 'expression':
      return evaluateExpression(node.expression, scope) ?? null;
    case 'not':
      return !truthy(evaluateConditionNode(node.operand, scope));
    case 'and':
      return (
        truthy(evaluateConditionNode(node.left, scope)) &&
        truthy(evaluateConditionNode(node.right, scope))
      );
    case 'or':
      return (
        truthy(evaluateConditionNode(node.left, scope)) ||
        truthy(evaluateConditionNode(node.right, scope))
      );
    case 'index': {
      const target = evaluateConditionNode(node.target, scope);
      const index = evaluateConditionNode(node.index, scope);
      if (target === null || typeof target !== 'object') return null;
      return (target as Record<string, unknown>)[String(index)] ?? null;
    }
    case 'compare': {
      const left = evaluateConditionNode(node.left, scope);
      const right = evaluateConditionNode(node.right, scope);
      if (node.op === '==') return equal(left, right);
      if (node.op === '!=') return !equal(left, right);
      return order(node.op, left, right);
    }
  }
}

/** Every runtime expression a condition refers to (for validation). */
export function conditionExpressions(node: ConditionNode): RuntimeExpression[] {
  switch (node.type) {
    case 'literal':
      return [];
    case 'template':
      return node.parts.filter((part): part is RuntimeExpression => typeof part !== 'string');
    case 'expression':
      return [node.expression];
    case 'not':
      return conditionExpressions(node.operand);
    case 'index':
      return [...conditionExpressions(node.target), ...conditionExpressions(node.index)];
    default:
      return [...conditionExpressions(node.left), ...conditionExpressions(node.right)];
  }
}
