import { describe, expect, it } from 'vitest';
import { medianRound } from '../src/kit/rounds.js';

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
