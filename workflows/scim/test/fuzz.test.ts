import { seededRandom } from '@mcp-identity/common/testing';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServedBin } from '../../../packages/arazzo-mcp/test/support/serve-bin.js';
import {
  type ScimHarness,
  seedUser,
  spawnPackServer,
  startScimHarness,
} from './support/harness.js';

/**
 * A bounded, reproducible fuzz of the SCIM MCP server's whole surface (issue 13): JSON-RPC
 * bodies, HTTP headers and the arguments of every tool, against the real command and a real
 * IdP. The server must answer everything without a 5xx or a crash, and every bad argument
 * with a tool or JSON-RPC error that says what is wrong.
 */
const SEED = 20_261_124;
const BODY_CASES = 150;
const HEADER_CASES = 60;
const CASES_PER_TOOL = 12;

const random = seededRandom(SEED);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
const chance = (p: number) => random() < p;

const STRINGS = [
  '',
  ' ',
  'alice',
  'a'.repeat(5_000),
  '../../Users',
  '%2e%2e%2fUsers',
  '?x=1#frag',
  '"; DROP TABLE users; --',
  'userName eq "x" or 1 eq 1',
  'userName eq',
  '\u0000\u0001\u001f',
  '\ud83d\ude00 émoji ✓',
  '\ud800',
  '<script>alert(1)</script>',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a log4shell-style probe, on purpose
  '${jndi:ldap://x}',
  '{"not":"an array"}',
  '[{"value":"internal_user_mgt_view"}]',
  '[]',
  '[1,2',
  'null',
  '00000000-0000-4000-8000-000000000000',
];
const NUMBERS = [0, -1, 1, 1.5, 2 ** 31, 2 ** 53, -(2 ** 53), 1e308, -1e-308];

function randomValue(depth = 0): unknown {
  switch (Math.floor(random() * (depth > 2 ? 4 : 6))) {
    case 0:
      return pick(STRINGS);
    case 1:
      return pick(NUMBERS);
    case 2:
      return chance(0.5);
    case 3:
      return null;
    case 4:
      return Array.from({ length: Math.floor(random() * 4) }, () => randomValue(depth + 1));
    default:
      return Object.fromEntries(
        Array.from({ length: Math.floor(random() * 4) }, (_, i) => [
          pick(['a', 'userId', '__proto__', 'constructor', `k${i}`]),
          randomValue(depth + 1),
        ]),
      );
  }
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** A value of the parameter's declared type (for the other arguments of a case). */
function valueOfType(type: string): unknown {
  if (type === 'integer') return pick([0, 1, 5, -1, 2 ** 31]);
  if (type === 'number') return pick([0, 1.5, -3]);
  if (type === 'boolean') return chance(0.5);
  return pick(STRINGS);
}

/** A value that is not of the parameter's type (integers are numbers in JSON Schema). */
function valueNotOfType(type: string): unknown {
  for (;;) {
    const value = randomValue();
    const actual = typeOf(value);
    if (actual !== type && !(type === 'number' && actual === 'integer')) return value;
  }
}

const HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-06-18',
};

let h: ScimHarness;
let served: ServedBin;
let tools: Tool[];
const statuses = new Map<number, number>();

async function send(
  body: string | Buffer,
  headers: Record<string, string> = HEADERS,
): Promise<{ status: number; json: unknown; text: string }> {
  const response = await fetch(`${served.url}/mcp`, { method: 'POST', headers, body });
  const text = await response.text();
  statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: response.status, json, text };
}

function expectWellFormedAnswer(
  what: unknown,
  answer: { status: number; json: unknown; text: string },
) {
  expect({ what, status: answer.status }).toEqual({ what, status: expect.any(Number) });
  expect({ what, serverError: answer.status >= 500 }).toEqual({ what, serverError: false });
  if (answer.text !== '') {
    expect({ what, json: answer.json !== undefined }).toEqual({ what, json: true });
  }
  // A JSON-RPC error always carries a numeric code and a message that says something.
  for (const message of [answer.json].flat()) {
    const error = (message as { error?: { code: unknown; message: unknown } } | undefined)?.error;
    if (error === undefined) continue;
    expect({ what, code: typeof error.code, message: typeof error.message }).toEqual({
      what,
      code: 'number',
      message: 'string',
    });
    expect((error.message as string).length).toBeGreaterThan(5);
  }
}

beforeAll(async () => {
  h = await startScimHarness({ tokenCache: true });
  await seedUser(h, 'fuzz-target');
  served = await spawnPackServer(h, ['--token-cache']);
  const listed = await send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
  tools = (listed.json as { result: { tools: Tool[] } }).result.tools;
}, 60_000);

afterAll(() => served?.stop());

describe(`fuzzing the SCIM MCP server (seed ${SEED})`, () => {
  it('answers random and malformed JSON-RPC bodies with 2xx/4xx and well-formed errors', async () => {
    const methods = ['initialize', 'ping', 'tools/list', 'tools/call', 'resources/list', 'x', ''];
    const bodies: (string | Buffer)[] = [
      '',
      '{',
      '[]',
      'null',
      '"text"',
      '['.repeat(50_000),
      `${'{"a":'.repeat(5_000)}1${'}'.repeat(5_000)}`,
      Buffer.from([0xff, 0xfe, 0x00, 0x7b]),
    ];
    /** tools/call messages whose `arguments` is not an object: each must get -32602. */
    const badArguments = new Set<string>();
    for (const args of ['text', [], 5, null, true]) {
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'get_user', arguments: args },
      });
      bodies.push(body);
      badArguments.add(body);
    }
    for (let i = 0; i < BODY_CASES; i++) {
      const message: Record<string, unknown> = {
        jsonrpc: chance(0.9) ? '2.0' : randomValue(),
        id: chance(0.8) ? Math.floor(random() * 1000) : randomValue(),
        method: chance(0.85) ? pick(methods) : randomValue(),
      };
      if (chance(0.8)) {
        message.params = chance(0.5)
          ? { name: pick(tools).name, arguments: chance(0.7) ? randomValue() : {} }
          : randomValue();
      }
      if (chance(0.1)) delete message.id;
      const text = JSON.stringify(chance(0.1) ? [message, message] : message);
      const truncated = chance(0.1);
      bodies.push(truncated ? text.slice(0, Math.floor(random() * text.length)) : text);
      const args = (message.params as { arguments?: unknown } | undefined)?.arguments;
      if (
        !truncated &&
        message.jsonrpc === '2.0' &&
        typeof message.id === 'number' &&
        message.method === 'tools/call' &&
        args !== undefined &&
        typeOf(args) !== 'object'
      ) {
        badArguments.add(text);
      }
    }
    expect(badArguments.size).toBeGreaterThan(5); // the five above and random ones
    for (const body of bodies) {
      const what = typeof body === 'string' ? body.slice(0, 200) : body.toString('hex');
      const answer = await send(body);
      expectWellFormedAnswer(what, answer);
      if (typeof body === 'string' && badArguments.has(body)) {
        expect({ what, answer: answer.json }).toMatchObject({
          what,
          answer: {
            error: {
              code: -32602,
              message: expect.stringContaining('Invalid params for tools/call: params.arguments'),
            },
          },
        });
      }
    }
  }, 120_000);

  it('answers random headers with 2xx/4xx', async () => {
    const values = {
      'content-type': [
        undefined,
        'application/json',
        'text/plain',
        'application/json; charset=latin1',
        'application/json, text/plain',
        '*/*',
        '\t',
      ],
      accept: [
        undefined,
        'application/json, text/event-stream',
        '*/*',
        'text/event-stream',
        'application/json',
        'x/y;q=oops',
      ],
      'mcp-protocol-version': [undefined, '2025-06-18', '2025-11-25', '1999-01-01', 'x', ''],
      origin: [undefined, 'http://localhost:1', 'http://evil.example', 'null', 'not a url'],
      'mcp-session-id': [undefined, 'abc', '\u00ff'],
    };
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    for (let i = 0; i < HEADER_CASES; i++) {
      const headers: Record<string, string> = {};
      for (const [name, options] of Object.entries(values)) {
        const value = pick(options as (string | undefined)[]);
        if (value !== undefined) headers[name] = value;
      }
      let answer: Awaited<ReturnType<typeof send>>;
      try {
        answer = await send(body, headers);
      } catch {
        continue; // fetch itself refuses some header values: nothing reached the server
      }
      expectWellFormedAnswer(headers, answer);
    }
  }, 120_000);

  it('answers bad arguments of every tool with a clear tool error, and odd valid ones without failing', async () => {
    const validator = new AjvJsonSchemaValidator();
    expect(tools).toHaveLength(21);
    for (const tool of tools) {
      const properties = tool.inputSchema.properties as Record<string, { type: string }>;
      const names = Object.keys(properties);
      const validateOutput = validator.getValidator(tool.outputSchema as never);
      for (let i = 0; i < CASES_PER_TOOL; i++) {
        const args: Record<string, unknown> = Object.fromEntries(
          names.map((name) => [name, valueOfType(properties[name]?.type ?? 'string')]),
        );
        const target = pick(names);
        const kind = pick(['missing', 'mistyped', 'mistyped', 'odd', 'odd', 'extra'] as const);
        if (kind === 'missing') delete args[target];
        if (kind === 'mistyped') args[target] = valueNotOfType(properties[target]?.type ?? '');
        if (kind === 'extra') args[pick(['extra', '__proto__', ''])] = randomValue();
        const what = { tool: tool.name, kind, target, args: JSON.stringify(args).slice(0, 300) };
        const answer = await send(
          JSON.stringify({
            jsonrpc: '2.0',
            id: i,
            method: 'tools/call',
            params: { name: tool.name, arguments: args },
          }),
        );
        expectWellFormedAnswer(what, answer);
        expect({ what, status: answer.status }).toEqual({ what, status: 200 });
        const result = (
          answer.json as {
            result: {
              content: { type: string; text: string }[];
              isError?: boolean;
              structuredContent?: unknown;
            };
          }
        ).result;
        const text = result.content[0]?.text ?? '';
        if (kind === 'missing' || kind === 'mistyped') {
          expect({ what, isError: result.isError }).toEqual({ what, isError: true });
          expect({ what, text }).toEqual({
            what,
            text: expect.stringMatching(
              new RegExp(
                `^MCP error -32602: Input validation error: Invalid arguments for tool ${tool.name}: .*'${target}'`,
              ),
            ),
          });
          continue;
        }
        // Valid types, odd values: the workflow runs (or a JSON argument is refused by name).
        if (result.isError) {
          expect({ what, text }).toEqual({
            what,
            text: expect.stringMatching(/must be a JSON (array|object) encoded as a string/),
          });
          continue;
        }
        expect({ what, text }).toEqual({
          what,
          text: expect.stringMatching(/^Workflow (Success|Error|Result)/),
        });
        const checked = validateOutput(result.structuredContent);
        expect({ what, valid: checked.valid, why: checked.errorMessage }).toEqual({
          what,
          valid: true,
          why: undefined,
        });
      }
    }
  }, 300_000);

  it('is still up and serving after all of it, having logged no server error', async () => {
    expect(served.child.exitCode).toBeNull();
    expect((await fetch(`${served.url}/health`)).status).toBe(200);
    const call = await send(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'search_users',
          arguments: { filter: 'userName eq fuzz-target', count: 1 },
        },
      }),
    );
    expect(call.json).toMatchObject({
      result: {
        structuredContent: { users: [expect.objectContaining({ userName: 'fuzz-target' })] },
      },
    });
    // pino levels 50 (error) and 60 (fatal): an unexpected failure inside the server.
    expect(served.stdout()).not.toMatch(/"level":(50|60)/);
    expect([...statuses.keys()].every((status) => status < 500)).toBe(true);
  });
});
