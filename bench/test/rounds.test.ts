import { describe, expect, it } from 'vitest';
import { interleavedRounds, medianRound } from '../src/kit/rounds.js';

describe('medianRound', () => {
  it('reports the whole median round by the figure asked for, the lower one of an even count', () => {
    const rounds = [
      { rps: 900, p99: 4 },
      { rps: 1000, p99: 9 },
      { rps: 800, p99: 2 },
    ];
    expect(medianRound(rounds, (r) => r.rps)).toBe(rounds[0]);
    expect(medianRound(rounds.slice(0, 2), (r) => r.rps)).toBe(rounds[0]);
    expect(rounds.map((r) => r.rps)).toEqual([900, 1000, 800]);
  });
});

describe('interleavedRounds', () => {
  it('runs the legs in turns, round after round, and keeps each leg’s median round', async () => {
    const order: string[] = [];
    const figures: Record<string, number[]> = { a: [5, 1, 3], b: [20, 40, 30] };
    const medians = await interleavedRounds(
      ['a', 'b'],
      3,
      async (leg, round) => {
        order.push(`${leg}${round}`);
        return { leg, rps: figures[leg]?.[round] ?? Number.NaN };
      },
      (r) => r.rps,
    );
    expect(order).toEqual(['a0', 'b0', 'a1', 'b1', 'a2', 'b2']);
    expect(medians.get('a')).toEqual({ leg: 'a', rps: 3 });
    expect(medians.get('b')).toEqual({ leg: 'b', rps: 30 });
  });
});
