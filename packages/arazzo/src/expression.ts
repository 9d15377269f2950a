/**
 * Arazzo 1.0.1 runtime expressions (the ABNF of the standard's "Runtime Expressions" section):
 * parsing into a small AST, evaluation against a scope, and `{$expr}` embedding in strings.
 */
import { boundedMemo, McpIdentityError, weakMemo } from '@mcp-identity/common';
import { getByPointer, JsonPointerError, parsePointer } from './json-pointer.js';

export class ExpressionSyntaxError extends McpIdentityError {
  readonly code = 'ERR_ARAZZO_EXPRESSION_SYNTAX';
}

export type ComponentKind = 'inputs' | 'parameters' | 'successActions' | 'failureActions';

export type RuntimeExpression = { source: string } & (
  | { kind: 'url' | 'method' | 'statusCode' }
  | { kind: 'request' | 'response'; part: 'header'; name: string }
  | { kind: 'request'; part: 'query' | 'path'; name: string }
  | { kind: 'request' | 'response'; part: 'body'; pointer: string }
  | { kind: 'inputs' | 'outputs'; name: string; pointer?: string }
  | { kind: 'steps'; stepId: string; name: string; pointer?: string }
  | {
      kind: 'workflows';
      workflowId: string;
      field: 'inputs' | 'outputs';
      name: string;
      pointer?: string;
    }
  | { kind: 'sourceDescriptions'; name: string; ref: string }
  | { kind: 'components'; component: ComponentKind; name: string }
);

export interface ExchangeRequest {
  headers: Record<string, string>;
  query: Record<string, unknown>;
  path: Record<string, unknown>;
  body: unknown;
}

export interface ExchangeResponse {
  /** header names lower-cased */
  headers: Record<string, string>;
  body: unknown;
}

export interface ExpressionScope {
  url?: string;
  method?: string;
  statusCode?: number;
  request?: ExchangeRequest;
  response?: ExchangeResponse;
  inputs: Record<string, unknown>;
  outputs?: Record<string, unknown>;
  steps: Record<string, Record<string, unknown>>;
  workflows: Record<
    string,
    { inputs?: Record<string, unknown>; outputs?: Record<string, unknown> }
  >;
  sourceDescriptions: Record<string, Record<string, unknown>>;
  components: Partial<Record<ComponentKind, Record<string, unknown>>>;
}

const ROOTS = [
  '$url',
  '$method',
  '$statusCode',
  '$request.',
  '$response.',
  '$inputs.',
  '$outputs.',
  '$steps.',
  '$workflows.',
  '$sourceDescriptions.',
  '$components.',
];

/** True when `text` starts like a runtime expression (so a syntax error in it is a problem). */
export function looksLikeExpression(text: string): boolean {
  return ROOTS.some((root) => text.startsWith(root));
}

const TCHAR = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const ID = /^[A-Za-z0-9_-]+$/;
const COMPONENT_KINDS: readonly ComponentKind[] = [
  'inputs',
  'parameters',
  'successActions',
  'failureActions',
];

function fail(source: string, why: string): never {
  throw new ExpressionSyntaxError(`invalid runtime expression "${source}": ${why}`);
}

function splitPointer(source: string, rest: string): { name: string; pointer?: string } {
  const hash = rest.indexOf('#');
  if (hash === -1) {
    if (rest === '') fail(source, 'missing name');
    return { name: rest };
  }
  const name = rest.slice(0, hash);
  const pointer = rest.slice(hash + 1);
  if (name === '') fail(source, 'missing name');
  checkPointer(source, pointer);
  return { name, pointer };
}

function checkPointer(source: string, pointer: string): void {
  try {
    parsePointer(pointer);
  } catch (error) {
    fail(source, (error as Error).message);
  }
}

function parseSource(
  source: string,
  kind: 'request' | 'response',
  rest: string,
): RuntimeExpression {
  if (rest === 'body' || rest.startsWith('body#') || rest.startsWith('body.')) {
    let pointer = '';
    if (rest.startsWith('body#')) pointer = rest.slice(5);
    // `$response.body.a.b` is the reference runner's dotted form; it means `#/a/b`.
    else if (rest.startsWith('body.')) pointer = `/${rest.slice(5).split('.').join('/')}`;
    checkPointer(source, pointer);
    return { source, kind, part: 'body', pointer };
  }
  const dot = rest.indexOf('.');
  const part = dot === -1 ? rest : rest.slice(0, dot);
  const name = dot === -1 ? '' : rest.slice(dot + 1);
  if (part === 'header' || (part === 'headers' && kind === 'response')) {
    if (!TCHAR.test(name)) fail(source, 'a header name must be an RFC 7230 token');
    return { source, kind, part: 'header', name };
  }
  if (kind === 'request' && (part === 'query' || part === 'path')) {
    if (name === '') fail(source, 'missing name');
    return { source, kind, part, name };
  }
  return fail(
    source,
    kind === 'request'
      ? 'expected header.<name>, query.<name>, path.<name> or body'
      : 'expected header.<name> or body',
  );
}

const PARSE_CACHE_LIMIT = 10_000;

/** Parses (memoised: expressions come from loaded documents and are parsed on every run). */
export const parseExpression: (source: string) => RuntimeExpression = boundedMemo(
  PARSE_CACHE_LIMIT,
  parseUncached,
);

function parseUncached(source: string): RuntimeExpression {
  if (source === '$url') return { source, kind: 'url' };
  if (source === '$method') return { source, kind: 'method' };
  if (source === '$statusCode') return { source, kind: 'statusCode' };
  const dot = source.indexOf('.');
  if (!source.startsWith('$') || dot === -1) return fail(source, 'unknown expression');
  const root = source.slice(1, dot);
  const rest = source.slice(dot + 1);
  switch (root) {
    case 'request':
    case 'response':
      return parseSource(source, root, rest);
    case 'inputs':
    case 'outputs':
      return { source, kind: root, ...splitPointer(source, rest) };
    case 'steps': {
      const match = /^([^.#]+)\.outputs\.(.*)$/s.exec(rest);
      if (!match) return fail(source, 'expected $steps.<stepId>.outputs.<name>');
      return { source, kind: 'steps', stepId: match[1]!, ...splitPointer(source, match[2]!) };
    }
    case 'workflows': {
      const match = /^([^.#]+)\.(inputs|outputs)\.(.*)$/s.exec(rest);
      if (!match) return fail(source, 'expected $workflows.<workflowId>.inputs|outputs.<name>');
      return {
        source,
        kind: 'workflows',
        workflowId: match[1]!,
        field: match[2] as 'inputs' | 'outputs',
        ...splitPointer(source, match[3]!),
      };
    }
    case 'sourceDescriptions': {
      const match = /^([^.]+)\.(.+)$/s.exec(rest);
      if (!match || !ID.test(match[1]!)) {
        return fail(source, 'expected $sourceDescriptions.<name>.<reference>');
      }
      return { source, kind: 'sourceDescriptions', name: match[1]!, ref: match[2]! };
    }
    case 'components': {
      const match = /^([^.]+)\.(.+)$/s.exec(rest);
      const component = match?.[1] as ComponentKind | undefined;
      if (!match || !component || !COMPONENT_KINDS.includes(component)) {
        return fail(source, `expected $components.<${COMPONENT_KINDS.join('|')}>.<name>`);
      }
      return { source, kind: 'components', component, name: match[2]! };
    }
    default:
      return fail(source, 'unknown expression');
  }
}

/** Looks a name up; a name absent as a key may be the reference runner's `a.b[0]` path form. */
function lookupName(container: Record<string, unknown> | undefined, name: string): unknown {
  if (!container) return undefined;
  if (Object.hasOwn(container, name)) return container[name];
  if (!/[.[]/.test(name)) return undefined;
  const tokens = name.match(/[^.[\]]+/g) ?? [];
  return getByPointer(container, tokens);
}

function withPointer(value: unknown, pointer: string | undefined): unknown {
  if (pointer === undefined || value === undefined) return value;
  try {
    return getByPointer(value, pointer);
  } catch (error) {
    if (error instanceof JsonPointerError) return undefined;
    throw error;
  }
}

function headerValue(headers: Record<string, string> | undefined, name: string): unknown {
  if (!headers) return undefined;
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === wanted) return value;
  }
  return undefined;
}

/** Evaluates a parsed expression; undefined means "cannot be resolved". */
export function evaluateExpression(expr: RuntimeExpression, scope: ExpressionScope): unknown {
  switch (expr.kind) {
    case 'url':
      return scope.url;
    case 'method':
      return scope.method;
    case 'statusCode':
      return scope.statusCode;
    case 'request':
    case 'response': {
      const exchange = expr.kind === 'request' ? scope.request : scope.response;
      if (!exchange) return undefined;
      if (expr.part === 'header') return headerValue(exchange.headers, expr.name);
      if (expr.part === 'body') return withPointer(exchange.body, expr.pointer);
      return (exchange as ExchangeRequest)[expr.part][expr.name];
    }
    case 'inputs':
      return withPointer(lookupName(scope.inputs, expr.name), expr.pointer);
    case 'outputs':
      return withPointer(lookupName(scope.outputs, expr.name), expr.pointer);
    case 'steps':
      return withPointer(lookupName(scope.steps[expr.stepId], expr.name), expr.pointer);
    case 'workflows':
      return withPointer(
        lookupName(scope.workflows[expr.workflowId]?.[expr.field], expr.name),
        expr.pointer,
      );
    case 'sourceDescriptions':
      return scope.sourceDescriptions[expr.name]?.[expr.ref];
    case 'components':
      return scope.components[expr.component]?.[expr.name];
  }
}

export type TemplatePart = string | RuntimeExpression;

/** Splits a string with embedded `{$expr}` parts; literal braces not followed by `$` stay. */
export function parseTemplate(text: string): TemplatePart[] {
  const parts: TemplatePart[] = [];
  let literal = '';
  let i = 0;
  while (i < text.length) {
    const open = text.indexOf('{$', i);
    if (open === -1) break;
    const close = text.indexOf('}', open);
    if (close === -1) break;
    literal += text.slice(i, open);
    if (literal) parts.push(literal);
    literal = '';
    parts.push(parseExpression(text.slice(open + 1, close)));
    i = close + 1;
  }
  literal += text.slice(i);
  if (literal) parts.push(literal);
  return parts;
}

/** How an embedded value becomes text: scalars as strings, objects and arrays as JSON. */
export function embed(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

export function renderTemplate(parts: TemplatePart[], scope: ExpressionScope): string {
  return parts
    .map((part) => (typeof part === 'string' ? part : embed(evaluateExpression(part, scope))))
    .join('');
}

/** An Arazzo value made ready to evaluate: see compileValue. */
export type CompiledValue = (scope: ExpressionScope) => unknown;

/**
 * An Arazzo value as a function of the scope, worked out once per value of a loaded document
 * (which never changes): a whole-string expression keeps the referenced value's type, strings
 * with `{$expr}` are interpolated, objects and arrays are walked — and rebuilt on every
 * evaluation, since callers may modify what they get (payload replacements).
 */
export function compileValue(value: unknown): CompiledValue {
  if (typeof value === 'string') return compileString(value);
  if (value === null || typeof value !== 'object') return () => value;
  return compileObject(value);
}

const compileObject = weakMemo((value: object): CompiledValue => {
  if (Array.isArray(value)) {
    const items = value.map(compileValue);
    return (scope) => items.map((item) => item(scope));
  }
  const members = Object.entries(value).map(([key, item]) => [key, compileValue(item)] as const);
  return (scope) => Object.fromEntries(members.map(([key, item]) => [key, item(scope)]));
});

const compileString = boundedMemo(PARSE_CACHE_LIMIT, (value): CompiledValue => {
  if (looksLikeExpression(value)) {
    const expression = parseExpression(value);
    return (scope) => evaluateExpression(expression, scope);
  }
  if (value.includes('{$')) {
    const parts = parseTemplate(value);
    return (scope) => renderTemplate(parts, scope);
  }
  return () => value;
});

/** Evaluates an Arazzo value (see compileValue). */
export function evaluateValue(value: unknown, scope: ExpressionScope): unknown {
  return compileValue(value)(scope);
}

/** Every runtime expression in an Arazzo value (for validation); throws on a syntax error. */
export function collectExpressions(
  value: unknown,
  into: RuntimeExpression[] = [],
): RuntimeExpression[] {
  if (typeof value === 'string') {
    if (looksLikeExpression(value)) into.push(parseExpression(value));
    else if (value.includes('{$')) {
      for (const part of parseTemplate(value)) if (typeof part !== 'string') into.push(part);
    }
  } else if (Array.isArray(value)) {
    for (const item of value) collectExpressions(item, into);
  } else if (value !== null && typeof value === 'object') {
    for (const item of Object.values(value)) collectExpressions(item, into);
  }
  return into;
}
