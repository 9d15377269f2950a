import {
  type ExpressionScope,
  evaluateConditionNode,
  evaluateValue,
  parseCondition,
  parseExpression,
} from '@mcp-identity/arazzo';
import { describe, expect, it } from 'vitest';

const scope: ExpressionScope = {
  url: 'https://api.example/users/1?x=1',
  method: 'GET',
  statusCode: 404,
  request: {
    headers: { accept: 'application/json' },
    query: { x: 1 },
    path: { id: 'u 1' },
    body: { user: { uuid: 'abc' } },
  },
  response: {
    headers: { 'content-type': 'application/scim+json', location: '/users/9' },
    body: {
      detail: 'User not found',
      status: '404',
      name: "O'Neil",
      items: ['a', 'b'],
      nothing: null,
      active: true,
    },
  },
  inputs: { userName: 'alice', count: 5, options: { maxLen: 10 }, list: [{ id: 'x' }] },
  outputs: { done: true },
  steps: { find: { users: [{ id: 'u1' }], total: 1 } },
  workflows: { other: { inputs: { a: 1 }, outputs: { mapped: { name: 'n' } } } },
  sourceDescriptions: { scim: { name: 'scim', url: './scim.yaml', type: 'openapi' } },
  components: { parameters: { page: { name: 'page', in: 'query', value: 1 } } },
};

const value = (text: string) => evaluateValue(text, scope);
const holds = (condition: string) => evaluateConditionNode(parseCondition(condition), scope);

describe('runtime expressions', () => {
  it('resolves every expression kind of the ABNF, keeping types', () => {
    expect(value('$url')).toBe('https://api.example/users/1?x=1');
    expect(value('$method')).toBe('GET');
    expect(value('$statusCode')).toBe(404);
    expect(value('$request.header.Accept')).toBe('application/json');
    expect(value('$request.query.x')).toBe(1);
    expect(value('$request.path.id')).toBe('u 1');
    expect(value('$request.body#/user/uuid')).toBe('abc');
    expect(value('$response.header.Location')).toBe('/users/9');
    expect(value('$response.headers.location')).toBe('/users/9');
    expect(value('$response.body')).toBe(scope.response!.body);
    expect(value('$response.body#/items/1')).toBe('b');
    expect(value('$response.body.items')).toEqual(['a', 'b']);
    expect(value('$inputs.count')).toBe(5);
    expect(value('$inputs.options#/maxLen')).toBe(10);
    expect(value('$inputs.list[0].id')).toBe('x');
    expect(value('$outputs.done')).toBe(true);
    expect(value('$steps.find.outputs.users#/0/id')).toBe('u1');
    expect(value('$workflows.other.inputs.a')).toBe(1);
    expect(value('$workflows.other.outputs.mapped#/name')).toBe('n');
    expect(value('$sourceDescriptions.scim.url')).toBe('./scim.yaml');
    expect(value('$components.parameters.page')).toEqual({ name: 'page', in: 'query', value: 1 });
  });

  it('gives undefined for what cannot be resolved', () => {
    expect(value('$response.body#/missing/deep')).toBeUndefined();
    expect(value('$steps.nope.outputs.x')).toBeUndefined();
    expect(value('$response.header.X-Absent')).toBeUndefined();
    expect(evaluateValue('$response.body', { ...scope, response: undefined })).toBeUndefined();
  });

  it('embeds expressions in strings: scalars as text, objects as JSON, nothing as empty', () => {
    expect(value('userName eq "{$inputs.userName}"')).toBe('userName eq "alice"');
    expect(value('{$inputs.options} and {$inputs.count}')).toBe('{"maxLen":10} and 5');
    expect(value('[{$response.body#/nothing}]')).toBe('[]');
    expect(value('{literal} braces')).toBe('{literal} braces');
    expect(evaluateValue({ a: ['$inputs.count', 'n={$inputs.count}'] }, scope)).toEqual({
      a: [5, 'n=5'],
    });
    expect(value('$not-an-expression')).toBe('$not-an-expression');
  });

  it('rejects malformed expressions with a message naming them', () => {
    for (const bad of [
      '$response.query.x',
      '$request.header.bad name',
      '$steps.a.b',
      '$inputs.',
      '$components.things.x',
      '$inputs.x#nope',
    ]) {
      expect(() => parseExpression(bad), bad).toThrow(`invalid runtime expression "${bad}"`);
    }
  });
});

describe('simple conditions', () => {
  it('compares with == != < <= > >= and combines with && || ! and parentheses', () => {
    expect(holds('$statusCode == 404')).toBe(true);
    expect(holds('$statusCode != 404')).toBe(false);
    expect(holds('$statusCode >= 400 && $statusCode < 500')).toBe(true);
    expect(holds('!($statusCode <= 399) || false')).toBe(true);
    expect(holds('false || true && false')).toBe(false);
    expect(holds('$response.body#/active')).toBe(true);
  });

  it('does not let a JSON pointer "#" hide the rest of the condition', () => {
    expect(holds("$statusCode == 404 && $response.body#/detail == 'nope'")).toBe(false);
    expect(holds("$statusCode == 404 && $response.body#/detail == 'User not found'")).toBe(true);
  });

  it('compares strings case-insensitively and numeric strings as numbers', () => {
    expect(holds("$inputs.userName == 'ALICE'")).toBe(true);
    expect(holds('$response.body#/status == 404')).toBe(true);
    expect(holds('$response.body#/status > 400')).toBe(true);
    expect(holds("$response.body#/name == 'o''neil'")).toBe(true);
    expect(holds('$response.body#/name == "O\'Neil"')).toBe(true);
  });

  it('treats null strictly: it only equals null and never orders', () => {
    expect(holds('$response.body#/nothing == null')).toBe(true);
    expect(holds('$response.body#/missing == null')).toBe(true);
    expect(holds("$response.body#/missing == ''")).toBe(false);
    expect(holds('$response.body#/missing > 1')).toBe(false);
    expect(holds('$response.body#/missing')).toBe(null);
  });

  it('indexes values and fills templates inside string literals', () => {
    expect(holds("$response.body#/items[1] == 'B'")).toBe(true);
    expect(holds("$response.body.items[0] == 'a'")).toBe(true);
    expect(holds("'{$inputs.userName}' == 'alice'")).toBe(true);
  });

  it('rejects what it cannot parse, saying where', () => {
    expect(() => parseCondition('$statusCode = 200')).toThrow(/offset 12/);
    expect(() => parseCondition('status == 200')).toThrow(/unexpected word "status"/);
    expect(() => parseCondition('($statusCode == 200')).toThrow(/expected "\)"/);
    expect(() => parseCondition("$inputs.a == 'open")).toThrow(/unterminated string/);
    expect(() => parseCondition('$statusCode == 200 200')).toThrow(/trailing/);
  });
});
