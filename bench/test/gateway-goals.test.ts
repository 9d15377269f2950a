import { describe, expect, it } from 'vitest';
import { gatewayGoals, verdict } from '../src/gateway-goals.js';

describe('gatewayGoals', () => {
  it('sets no goal when no goal flag is given', () => {
    expect(gatewayGoals({})).toEqual({});
  });

  it('reads each goal flag as a number', () => {
    expect(
      gatewayGoals({
        'goal-share-of-nginx': '35',
        'goal-cpu-ms': '0.04',
        'goal-added-p50-ms': '0.2',
        'goal-rss-ratio': '1.5',
      }),
    ).toEqual({ shareOfNginxPercent: 35, cpuMs: 0.04, addedP50Ms: 0.2, rssRatio: 1.5 });
  });
});

describe('verdict', () => {
  it('says nothing without a goal', () => {
    expect(verdict(0.05, undefined, '≤')).toBe('');
  });

  it('says whether a figure meets an upper or a lower bound, the bound itself included', () => {
    expect(verdict(0.04, 0.04, '≤', ' ms')).toBe('goal ≤ 0.04 ms: met');
    expect(verdict(0.0401, 0.04, '≤', ' ms')).toBe('goal ≤ 0.04 ms: missed');
    expect(verdict(35, 35, '≥', '%')).toBe('goal ≥ 35%: met');
    expect(verdict(34.9, 35, '≥', '%')).toBe('goal ≥ 35%: missed');
  });

  it('neither meets nor misses a goal when the figure could not be measured', () => {
    expect(verdict(undefined, 1.5, '≤', '×')).toBe('goal ≤ 1.5×: not measured');
    expect(verdict(Number.NaN, 1.5, '≤', '×')).toBe('goal ≤ 1.5×: not measured');
  });
});
