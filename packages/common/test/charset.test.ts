import { declaredCharset, isUtf8Body } from '@mcp-identity/common';
import { describe, expect, it } from 'vitest';

describe('declaredCharset / isUtf8Body', () => {
  it.each([
    [undefined, undefined, true],
    ['application/json', undefined, true],
    ['application/json; charset=utf-8', 'utf-8', true],
    ['application/json;CHARSET="UTF-8"', 'utf-8', true],
    ['application/x-www-form-urlencoded; charset=utf8', 'utf8', true],
    ['application/json; charset=utf-7', 'utf-7', false],
    ['application/x-www-form-urlencoded; charset="utf-16"', 'utf-16', false],
    ['application/json; charset=', '', false],
  ])('%s → %s', (contentType, charset, utf8) => {
    expect(declaredCharset(contentType)).toBe(charset);
    expect(isUtf8Body(contentType)).toBe(utf8);
  });
});
