/** RFC 6901 JSON Pointer helpers. */
import { boundedMemo, McpIdentityError } from '@mcp-identity/common';

export class JsonPointerError extends McpIdentityError {
  readonly code = 'ERR_JSON_POINTER';
}

export function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) {
    throw new JsonPointerError(`JSON pointer "${pointer}" must be empty or start with "/"`);
  }
  return pointer
    .slice(1)
    .split('/')
    .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'));
}

export function escapeToken(token: string | number): string {
  return String(token).replace(/~/g, '~0').replace(/\//g, '~1');
}

export function joinPointer(...tokens: (string | number)[]): string {
  return tokens.map((t) => `/${escapeToken(t)}`).join('');
}

const ARRAY_INDEX = /^(0|[1-9][0-9]*)$/;

function child(value: unknown, token: string): unknown {
  if (Array.isArray(value)) {
    return ARRAY_INDEX.test(token) ? value[Number(token)] : undefined;
  }
  if (value !== null && typeof value === 'object' && Object.hasOwn(value, token)) {
    return (value as Record<string, unknown>)[token];
  }
  return undefined;
}

/** parsePointer, memoised: the pointers used on every run come from loaded documents. */
const pointerTokens: (pointer: string) => readonly string[] = boundedMemo(10_000, parsePointer);

/** The value at `pointer`, or undefined when any token does not exist. */
export function getByPointer(root: unknown, pointer: string | readonly string[]): unknown {
  const tokens = typeof pointer === 'string' ? pointerTokens(pointer) : pointer;
  let current = root;
  for (const token of tokens) {
    current = child(current, token);
    if (current === undefined) return undefined;
  }
  return current;
}

/** Sets (or inserts, for array index `-`) the value at `pointer`; the parent must exist. */
export function setByPointer(root: unknown, pointer: string, value: unknown): unknown {
  const tokens = pointerTokens(pointer);
  if (tokens.length === 0) return value;
  const last = tokens[tokens.length - 1]!;
  const parent = getByPointer(root, tokens.slice(0, -1));
  if (Array.isArray(parent)) {
    if (last === '-') parent.push(value);
    else if (ARRAY_INDEX.test(last) && Number(last) <= parent.length) parent[Number(last)] = value;
    else throw new JsonPointerError(`JSON pointer "${pointer}": no array index "${last}"`);
  } else if (parent !== null && typeof parent === 'object') {
    (parent as Record<string, unknown>)[last] = value;
  } else {
    throw new JsonPointerError(`JSON pointer "${pointer}": parent is not an object or array`);
  }
  return root;
}
