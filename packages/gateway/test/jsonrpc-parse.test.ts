import { seededRandom } from '@mcp-identity/common/testing';
import { parseMcpBody } from '@mcp-identity/gateway';
import { describe, expect, it } from 'vitest';

/**
 * What parseMcpBody must answer, written the plain way: JSON.parse, then the member names of
 * the top level and of `params` as the text spells them, to refuse duplicates JSON.parse would
 * hide. The gateway's one-pass parser is checked against it on mutated bodies.
 */
function reference(text: string) {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { code: -32700 };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { code: -32600 };
  const keys = memberNames(text);
  const twice = (names: string[], name: string) =>
    names.filter((key) => key.toLowerCase() === name).length > 1;
  if (['method', 'params', 'jsonrpc', 'id'].some((name) => twice(keys.top, name))) {
    return { code: -32600 };
  }
  if (['name', 'uri', '_meta'].some((name) => twice(keys.params, name))) return { code: -32600 };
  if (keys.meta.filter((key) => key === VERSION).length > 1) return { code: -32600 };
  const message = value as Record<string, unknown>;
  const { id, method, params } = message;
  if (message.jsonrpc !== '2.0') return { code: -32600 };
  if (id !== undefined && id !== null && typeof id !== 'string' && typeof id !== 'number') {
    return { code: -32600 };
  }
  if (method === undefined && id !== undefined && ('result' in message || 'error' in message)) {
    return { call: { id, method: '', params: undefined, target: '', metaVersion: undefined } };
  }
  if (typeof method !== 'string') return { code: -32600 };
  if (
    params !== undefined &&
    (params === null || typeof params !== 'object' || Array.isArray(params))
  ) {
    return { code: -32600 };
  }
  const p = params as Record<string, unknown> | undefined;
  let target: unknown = '';
  if (method === 'tools/call' || method === 'prompts/get') target = p?.name;
  if (method === 'resources/read') target = p?.uri;
  if (typeof target !== 'string') return { code: -32600 };
  const meta = p?._meta;
  const isObject = meta !== null && typeof meta === 'object' && !Array.isArray(meta);
  const metaVersion = isObject ? (meta as Record<string, unknown>)[VERSION] : undefined;
  return { call: { id: id ?? null, method, params: p, target, metaVersion } };
}

const VERSION = 'io.modelcontextprotocol/protocolVersion';

/**
 * Member names of the top-level object, of its `params` object and of `params._meta`, decoded,
 * in text order.
 */
function memberNames(text: string): { top: string[]; params: string[]; meta: string[] } {
  const top: string[] = [];
  const params: string[] = [];
  const meta: string[] = [];
  const containers: string[] = [];
  let topKey = '';
  let paramsKey = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      const after = text.slice(end + 1).trimStart();
      if (after.startsWith(':') && containers.at(-1) === '{') {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (containers.length === 1) {
          topKey = key;
          top.push(key);
        } else if (containers.length === 2 && topKey === 'params') {
          paramsKey = key;
          params.push(key);
        } else if (containers.length === 3 && topKey === 'params' && paramsKey === '_meta') {
          meta.push(key);
        }
      }
      i = end;
    } else if (c === '{' || c === '[') {
      containers.push(c);
    } else if (c === '}' || c === ']') {
      containers.pop();
    }
  }
  return { top, params, meta };
}

const BODIES = [
  '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_users","arguments":{"filter":"userName sw a","count":5}}}',
  '{"jsonrpc":"2.0","id":"a-1","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}',
  '{"jsonrpc":"2.0","method":"notifications/initialized"}',
  '{"jsonrpc":"2.0","id":-1.5e3,"result":{"content":[{"type":"text","text":"x"}]}}',
  '{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"no"}}',
  '{ "jsonrpc" : "2.0" , "id" : 0 , "method" : "resources/read" , "params" : { "uri" : "file:///a\\"b" } }',
  '{"jsonrpc":"2\\u002e0","id":true,"m\\u0065thod":"prompts/get","params":{"n\\u0061me":"p","NAME":"q"}}',
  '{"jsonrpc":"2.0","id":7,"method":"tools/list","params":[{"name":1,"name":2}],"Method":"x"}',
  '[{"jsonrpc":"2.0","id":1,"method":"ping"}]',
  '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","x":{"y":[1,{}]}},"name":"get_user","arguments":{"id":"u"}}}',
  '{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"c","_meta":{}}}',
];

/** Pieces a mutation inserts: JSON punctuation, escapes, member names in other cases, bytes. */
const PIECES = [
  '{',
  '}',
  '[',
  ']',
  ':',
  ',',
  '"',
  '\\',
  '\\u00',
  '\\n',
  '0',
  '-',
  '.',
  'e',
  '+',
  '1',
  '01',
  'true',
  'false',
  'null',
  'nul',
  ' ',
  '\t',
  '\n',
  '\u0001',
  '\u007f',
  'é',
  '💥',
  '\ufeff',
  '"name":"x",',
  '"Name":1,',
  '"method":"tools/call",',
  '"ID":2,',
  '"params":{},',
  '"params":{"uri":"u"},',
  '"result":1,',
  '"error":{},',
  '"jsonrpc":"2.0",',
  '"_meta":{"v":"2026-07-28"},',
  '"io.modelcontextprotocol/protocolVersion":"2026-07-28",',
  '"io.modelcontextprotocol/protocolVersion":1,',
  '"_META":[],',
];

describe('parseMcpBody against JSON.parse and the member names as written', () => {
  it('answers every mutated body as the reference does', () => {
    const next = seededRandom(15);
    const int = (n: number) => Math.floor(next() * n);
    const failures: string[] = [];
    for (let round = 0; round < 20_000; round++) {
      let text = BODIES[int(BODIES.length)] as string;
      for (let edits = int(4); edits >= 0; edits--) {
        const at = int(text.length + 1);
        const cut = int(3) === 0 ? int(4) : 0;
        const piece = int(3) === 0 ? '' : (PIECES[int(PIECES.length)] as string);
        text = text.slice(0, at) + piece + text.slice(at + cut);
      }
      // As received: a cut through a surrogate pair arrives as U+FFFD.
      const body = Buffer.from(text);
      const expected = reference(body.toString('utf8'));
      const actual = parseMcpBody(body);
      const same =
        'code' in expected
          ? !actual.ok && actual.code === expected.code
          : actual.ok &&
            Object.is(actual.call.id, expected.call.id) &&
            actual.call.method === expected.call.method &&
            actual.call.target === expected.call.target &&
            JSON.stringify(actual.call.params) === JSON.stringify(expected.call.params) &&
            JSON.stringify(actual.call.metaVersion) === JSON.stringify(expected.call.metaVersion);
      if (!same) failures.push(text);
    }
    expect(failures.slice(0, 5)).toEqual([]);
  });
});

describe('parseMcpBody, one body after another', () => {
  it("keeps each call's params its own when they are read after later bodies were parsed", () => {
    const body = (version: string) =>
      Buffer.from(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: version },
        }),
      );
    const first = parseMcpBody(body('2025-06-18'));
    const second = parseMcpBody(body('2025-03-26'));
    const refused = parseMcpBody('{"jsonrpc":"2.0","method":"x","params":[1]}');
    expect(refused.ok).toBe(false);
    expect(first.ok && first.call.params).toEqual({ protocolVersion: '2025-06-18' });
    expect(second.ok && second.call.params).toEqual({ protocolVersion: '2025-03-26' });
  });

  it("reads a modern call's _meta version without building params, and refuses two of them", () => {
    const call = (meta: string) =>
      parseMcpBody(
        `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"_meta":{"${VERSION}":"x"}},"_meta":${meta}}}`,
      );
    const version = (meta: string) => {
      const parsed = call(meta);
      return parsed.ok ? parsed.call.metaVersion : parsed.code;
    };
    expect(version(`{"${VERSION}":"2026-07-28"}`)).toBe('2026-07-28');
    expect(version(`{"a":{"${VERSION}":"no"},"${VERSION}":"2026-07-28"}`)).toBe('2026-07-28');
    expect(version(`{"io.modelcontextprotocol\\u002fprotocolVersion":"2026-07-28"}`)).toBe(
      '2026-07-28',
    );
    expect(version(`{"${VERSION}":20260728}`)).toBe(20260728);
    expect(version(`{"${VERSION}":{"a":[1]},"b":2}`)).toEqual({ a: [1] });
    expect(version(`{"${VERSION}":[1]}`)).toEqual([1]);
    expect(version(`[{"${VERSION}":"2026-07-28"}]`)).toBeUndefined();
    expect(version('{}')).toBeUndefined();
    expect(version(`{"${VERSION}":"2026-07-28","${VERSION}":"2025-11-25"}`)).toBe(-32600);
  });

  it('reads each method and tool name from its own body, whatever the body before spelt', () => {
    const call = (name: Buffer | string, method = 'tools/call') =>
      Buffer.concat([
        Buffer.from(`{"jsonrpc":"2.0","id":1,"method":"${method}","params":{"name":"`),
        Buffer.from(name),
        Buffer.from('"}}'),
      ]);
    const read = (body: Buffer) => {
      const parsed = parseMcpBody(body);
      return parsed.ok ? [parsed.call.method, parsed.call.target] : parsed.code;
    };
    expect(read(call('search_users'))).toEqual(['tools/call', 'search_users']);
    expect(read(call('search_users'))).toEqual(['tools/call', 'search_users']);
    expect(read(call('search_userz'))).toEqual(['tools/call', 'search_userz']);
    expect(read(call('x', 'prompts/get'))).toEqual(['prompts/get', 'x']);
    expect(read(call('x', 'tools/list'))).toEqual(['tools/list', '']);
    expect(read(call('\\u0073earch_users'))).toEqual(['tools/call', 'search_users']);
    // "é" is two bytes in UTF-8 and one UTF-16 code unit, 0xE9; the lone byte 0xE9 that follows
    // is not that character but an invalid sequence, read as U+FFFD.
    expect(read(call('é'))).toEqual(['tools/call', 'é']);
    expect(read(call(Buffer.from([0xe9])))).toEqual(['tools/call', '\uFFFD']);
  });
});
