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
  let currentTopKey = '';
  let i = 0;
  while (i < text.length) {
    const ch = text[i];
    if (ch === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      const token = text.slice(i, end + 1);
      let next = end + 1;
      while (next < text.length && /\s/.test(text[next] as string)) next++;
      if (text[next] === ':') {
        const key = JSON.parse(token) as string;
        if (depth === 1) {
          top.push(key);
          currentTopKey = key;
        } else if (depth === 2 && currentTopKey === 'params') {
          params.push(key);
        }
      }
      i = end + 1;
      continue;
    }
    if (ch === '{' || ch === '[') depth++;
    else if (ch === '}' || ch === ']') depth--;
    i++;
  }
  return { top, params };
}

function ambiguous(keys: string[], names: string[]): boolean {
  return names.some((name) => keys.filter((key) => key.toLowerCase() === name).length > 1);
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
  if (ambiguous(keys.top, ['method', 'params', 'jsonrpc', 'id'])) return INVALID;
  if (ambiguous(keys.params, ['name', 'uri'])) return INVALID;
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
