import { compileSchema, keyPath, SchemaError, stringEnum } from '@mcp-identity/common';
import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';

const ITEM = compileSchema(
  Type.Object(
    {
      name: Type.String({ minLength: 1 }),
      kind: stringEnum(['a', 'b']),
      tags: Type.Optional(Type.Array(Type.Union([Type.Literal('*'), Type.Integer()]))),
    },
    { additionalProperties: false },
  ),
);

describe('compileSchema', () => {
  it('narrows a matching value and returns it from parse unchanged', () => {
    const value: unknown = { name: 'x', kind: 'a', tags: ['*', 3] };
    expect(ITEM.is(value)).toBe(true);
    expect(ITEM.issues(value)).toEqual([]);
    expect(ITEM.parse(value, 'item')).toBe(value);
  });

  it('names the unknown and the missing members and the offending values', () => {
    const issues = ITEM.issues({ kind: 'c', tags: [1, 'x'], extra: true });
    expect(issues.map((i) => [keyPath(i.path), i.keyword, i.message, i.inAlternative])).toEqual([
      ['name', 'required', 'is required', false],
      ['extra', 'additionalProperties', 'unknown key', false],
      ['kind', 'enum', 'must be equal to one of the allowed values', false],
      ['tags[1]', 'const', 'must be equal to constant', true],
      ['tags[1]', 'type', 'must be integer', true],
      ['tags[1]', 'anyOf', 'must match a schema in anyOf', false],
    ]);
  });

  it('parse throws a SchemaError listing every issue by JSON pointer', () => {
    const parse = () => ITEM.parse({ name: '', kind: 'a', 'a/b~': 1 }, 'The item');
    expect(parse).toThrow(SchemaError);
    expect(parse).toThrow(
      'The item is invalid:\n  /a~1b~0: unknown key\n  /name: must NOT have fewer than 1 characters',
    );
  });
});

describe('keyPath', () => {
  it('writes array indices in brackets and members after dots, after a prefix', () => {
    expect(keyPath(['a', 0, 'b'])).toBe('a[0].b');
    expect(keyPath([], '(root)')).toBe('(root)');
    expect(keyPath(['tools', 2, 'name'], 'spec.policies[0].params')).toBe(
      'spec.policies[0].params.tools[2].name',
    );
  });
});
