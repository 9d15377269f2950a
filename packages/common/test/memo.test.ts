import { addBounded } from '@mcp-identity/common';
import { describe, expect, it } from 'vitest';

describe('addBounded', () => {
  it('keeps at most the limit, dropping the oldest insertion first', () => {
    const map = new Map<string, number>();
    for (const [i, key] of ['a', 'b', 'c', 'd', 'e'].entries()) addBounded(map, key, i, 3);
    expect([...map]).toEqual([
      ['c', 2],
      ['d', 3],
      ['e', 4],
    ]);
  });

  it('drops nothing while there is room', () => {
    const map = new Map([['a', 1]]);
    addBounded(map, 'b', 2, 2);
    expect([...map.keys()]).toEqual(['a', 'b']);
  });
});
