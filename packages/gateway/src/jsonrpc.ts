import type { JsonRpcId } from '@mcp-identity/common';

/** What the gateway needs to know about one MCP request posted to `/mcp`. */
export interface McpCall {
  id: JsonRpcId;
  method: string;
  params: Record<string, unknown> | undefined;
  /** `params.name` for tools/call and prompts/get, `params.uri` for resources/read, else ''. */
  target: string;
}

export type ParseResult =
  | { ok: true; call: McpCall }
  | { ok: false; code: -32700 | -32600; message: string; data?: string };

const INVALID: ParseResult = {
  ok: false,
  code: -32600,
  message: 'Invalid Request',
  data: 'Invalid MCP request format',
};

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** Whitespace between JSON tokens (RFC 8259 §2): space, tab, line feed, carriage return. */
function isJsonWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
}

/**
 * Collects the keys of the top-level object and of its `params` member as written in the raw
 * text. JSON.parse keeps only the last of duplicated keys, so a peer that keeps the first one
 * would see a different request than we authorised; the raw keys let us refuse such bodies.
 * Assumes `text` is already known to be valid JSON with an object at the top.
 */
function rawMemberKeys(text: string): { top: string[]; params: string[] } {
  const top: string[] = [];
  const params: string[] = [];
  let depth = 0;
  let inParams = false;
  let i = 0;
  while (i < text.length) {
    const ch = text.charCodeAt(i);
    if (ch === QUOTE) {
      let end = i + 1;
      let escaped = false;
      for (let c = text.charCodeAt(end); c !== QUOTE; c = text.charCodeAt(end)) {
        if (c === BACKSLASH) {
          escaped = true;
          end += 2;
        } else {
          end += 1;
        }
      }
      // Only members of the top-level object and of its `params` matter; deeper strings are
      // skipped without being copied.
      if (depth === 1 || (depth === 2 && inParams)) {
        let next = end + 1;
        while (isJsonWhitespace(text.charCodeAt(next))) next++;
        if (text.charCodeAt(next) === COLON) {
          const key = escaped
            ? (JSON.parse(text.slice(i, end + 1)) as string)
            : text.slice(i + 1, end);
          if (depth === 1) {
            top.push(key);
            inParams = key === 'params';
          } else {
            params.push(key);
          }
        }
      }
      i = end + 1;
      continue;
    }
    if (ch === OPEN_BRACE || ch === OPEN_BRACKET) depth++;
    else if (ch === CLOSE_BRACE || ch === CLOSE_BRACKET) depth--;
    i++;
  }
  return { top, params };
}

/** Members that must appear once, in any case spelling, at the top and in `params`. */
const TOP_MEMBERS = ['method', 'params', 'jsonrpc', 'id'];
const PARAMS_MEMBERS = ['name', 'uri'];

/**
 * Whether `key` is a case spelling of `name`, a lower-case ASCII member name, without making a
 * lower-cased copy. For these names the result is that of `key.toLowerCase() === name`: the only
 * characters that lower-case to one of their ASCII letters are the letter's own two cases
 * (U+212A KELVIN SIGN becomes `k`, which none of them contains; U+0130 becomes two characters).
 */
function isCaseSpellingOf(key: string, name: string): boolean {
  if (key.length !== name.length) return false;
  for (let i = 0; i < name.length; i++) {
    // Setting bit 0x20 maps an ASCII capital to its small letter and leaves small ones as they are.
    if ((key.charCodeAt(i) | 0x20) !== name.charCodeAt(i)) return false;
  }
  return true;
}

function ambiguous(keys: string[], names: readonly string[]): boolean {
  for (const name of names) {
    let seen = 0;
    for (const key of keys) if (isCaseSpellingOf(key, name) && ++seen > 1) return true;
  }
  return false;
}

/**
 * Parses a POSTed MCP message strictly: one JSON-RPC request or notification object (no
 * batches), with unambiguous `method`, `params`, `params.name` and `params.uri` members.
 */
export function parseMcpBody(body: Buffer | string): ParseResult {
  const text = typeof body === 'string' ? body : body.toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, code: -32700, message: 'Parse error' };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return INVALID;
  const message = value as Record<string, unknown>;
  const keys = rawMemberKeys(text);
  if (ambiguous(keys.top, TOP_MEMBERS)) return INVALID;
  if (ambiguous(keys.params, PARAMS_MEMBERS)) return INVALID;
  if (message.jsonrpc !== '2.0') return INVALID;
  const { id } = message;
  if (id !== undefined && id !== null && typeof id !== 'string' && typeof id !== 'number') {
    return INVALID;
  }
  if (
    message.method === undefined &&
    id !== undefined &&
    ('result' in message || 'error' in message)
  ) {
    // A client's reply to a server-initiated request (sampling, elicitation, roots).
    return { ok: true, call: { id, method: '', params: undefined, target: '' } };
  }
  if (typeof message.method !== 'string') return INVALID;
  const { params } = message;
  if (
    params !== undefined &&
    (params === null || typeof params !== 'object' || Array.isArray(params))
  ) {
    return INVALID;
  }
  const p = params as Record<string, unknown> | undefined;
  let target = '';
  if (message.method === 'tools/call' || message.method === 'prompts/get') {
    if (typeof p?.name !== 'string') return INVALID;
    target = p.name;
  } else if (message.method === 'resources/read') {
    if (typeof p?.uri !== 'string') return INVALID;
    target = p.uri;
  }
  return { ok: true, call: { id: id ?? null, method: message.method, params: p, target } };
}

/** Best-effort request id for error replies when the body is not a usable request. */
export function requestIdOf(body: Buffer | undefined): JsonRpcId {
  if (!body || body.length === 0) return null;
  try {
    const value = JSON.parse(body.toString('utf8')) as { id?: unknown };
    const id = value?.id;
    return typeof id === 'string' || typeof id === 'number' ? id : null;
  } catch {
    return null;
  }
}
