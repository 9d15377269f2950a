import { FairPool } from '@mcp-identity/common';
import { seededRandom } from '@mcp-identity/common/testing';
import { describe, expect, it } from 'vitest';

/** Admits `id:network:client` entries in order. */
function admitAll(pool: FairPool, entries: string): void {
  for (const entry of entries.split(' ')) {
    const [id, network, client] = entry.split(':') as [string, string, string];
    pool.admit(id, network, client);
  }
}

describe('FairPool', () => {
  it('displaces the oldest entry of the network holding the most when full', () => {
    const pool = new FairPool({ cap: 4, perNetwork: 10, perClient: 10 });
    expect(pool.admit('a1', 'A', 'c')).toEqual([]);
    expect(pool.admit('b1', 'B', 'c')).toEqual([]);
    expect(pool.admit('a2', 'A', 'c')).toEqual([]);
    expect(pool.admit('a3', 'A', 'c')).toEqual([]);
    expect(pool.admit('n1', 'N', 'c')).toEqual(['a1']);
    expect(pool.admit('b2', 'B', 'c')).toEqual(['a2']);
    // B now holds the most.
    expect(pool.admit('b3', 'B', 'c')).toEqual(['b1']);
    expect(pool.size).toBe(4);
    expect(pool.has('n1')).toBe(true);
  });

  it('never displaces a lone entry while a network holds more', () => {
    const pool = new FairPool({ cap: 100, perNetwork: 1000, perClient: 1000 });
    for (let i = 0; i < 100; i++) pool.admit(`flood-${i}`, `F${i % 7}`, 'c');
    pool.admit('user', 'U', 'c');
    for (let i = 100; i < 10_000; i++) pool.admit(`flood-${i}`, `F${i % 7}`, 'c');
    expect(pool.has('user')).toBe(true);
    expect(pool.size).toBe(100);
  });

  it("keeps a network to its quota by displacing that network's oldest entry", () => {
    const pool = new FairPool({ cap: 100, perNetwork: 2, perClient: 100 });
    admitAll(pool, 'a1:A:c a2:A:c b1:B:c');
    expect(pool.admit('a3', 'A', 'c')).toEqual(['a1']);
    expect(pool.size).toBe(3);
  });

  it("keeps a client to its quota, taking from that client's busiest network", () => {
    const pool = new FairPool({ cap: 100, perNetwork: 100, perClient: 3 });
    admitAll(pool, 'u1:U:c f1:F:c f2:F:c o1:O:other');
    expect(pool.admit('f3', 'F', 'c')).toEqual(['f1']);
    expect(pool.admit('g1', 'G', 'c')).toEqual(['f2']);
    expect(pool.has('u1')).toBe(true);
    expect(pool.has('o1')).toBe(true);
  });

  it('forgets removed entries', () => {
    const pool = new FairPool({ cap: 2, perNetwork: 2, perClient: 2 });
    admitAll(pool, 'a1:A:c');
    expect(pool.remove('a1')).toBe(true);
    expect(pool.remove('a1')).toBe(false);
    expect(pool.size).toBe(0);
    expect(pool.admit('a2', 'A', 'c')).toEqual([]);
    expect(pool.admit('a3', 'A', 'c')).toEqual([]);
    expect(pool.admit('b1', 'B', 'd')).toEqual(['a2']);
  });

  it('holds its bounds under random admissions and removals', () => {
    const next = seededRandom(36);
    const limits = { cap: 50, perNetwork: 12, perClient: 20 };
    const pool = new FairPool(limits);
    const held = new Map<string, { network: string; client: string }>();
    for (let i = 0; i < 2000; i++) {
      if (next() < 0.2 && held.size > 0) {
        const id = [...held.keys()][Math.floor(next() * held.size)]!;
        expect(pool.remove(id)).toBe(true);
        held.delete(id);
        continue;
      }
      const entry = { network: `n${Math.floor(next() * 9)}`, client: `c${Math.floor(next() * 4)}` };
      for (const gone of pool.admit(`e${i}`, entry.network, entry.client)) {
        expect(held.delete(gone)).toBe(true);
      }
      held.set(`e${i}`, entry);
      const count = (key: 'network' | 'client', value: string) =>
        [...held.values()].filter((e) => e[key] === value).length;
      expect(pool.size).toBe(held.size);
      expect(held.size).toBeLessThanOrEqual(limits.cap);
      expect(count('network', entry.network)).toBeLessThanOrEqual(limits.perNetwork);
      expect(count('client', entry.client)).toBeLessThanOrEqual(limits.perClient);
    }
  });

  it('refuses limits that are not positive integers', () => {
    expect(() => new FairPool({ cap: 0, perNetwork: 1, perClient: 1 })).toThrow(/cap/);
    expect(() => new FairPool({ cap: 1, perNetwork: 1.5, perClient: 1 })).toThrow(/perNetwork/);
  });
});
