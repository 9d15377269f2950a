import { describe, expect, it } from 'vitest';
import {
  type CallRecord,
  checkWrites,
  type KillWindow,
  renderSoakReport,
  tallyWindows,
  type WriteRecord,
} from '../src/kit/soak-report.js';

const T0 = 1_000_000;

describe('the soak report', () => {
  const windows: KillWindow[] = [
    { service: 'idp', killedAt: T0 + 30_000, backAt: T0 + 33_000 },
    { service: 'area-a', killedAt: T0 + 90_000, backAt: T0 + 91_000 },
  ];
  const calls: CallRecord[] = [
    { area: 'B', endedAt: T0 + 1_000, class: 'acknowledged', why: 'success' },
    { area: 'B', endedAt: T0 + 31_000, class: 'failed', why: 'token, applied no' },
    { area: 'A', endedAt: T0 + 32_000, class: 'failed', why: 'token, applied no' },
    // Within the grace after the IdP is back: still the IdP's window.
    { area: 'B', endedAt: T0 + 34_500, class: 'unknown', why: 'timeout, applied unknown' },
    { area: 'A', endedAt: T0 + 90_500, class: 'failed', why: 'not sent' },
    { area: 'B', endedAt: T0 + 95_000, class: 'refused', why: 'HTTP 401' },
  ];

  it('counts each call in the kill window it ended in, per area, the rest outside', () => {
    const tallies = tallyWindows(calls, windows, ['B', 'A'], 2_000);
    const counts = tallies.map((t) => [t.window?.service ?? 'outside', t.area, t.counts]);
    expect(counts).toEqual([
      ['idp', 'B', { calls: 2, acknowledged: 0, refused: 0, failed: 1, unknown: 1 }],
      ['idp', 'A', { calls: 1, acknowledged: 0, refused: 0, failed: 1, unknown: 0 }],
      ['area-a', 'B', { calls: 0, acknowledged: 0, refused: 0, failed: 0, unknown: 0 }],
      ['area-a', 'A', { calls: 1, acknowledged: 0, refused: 0, failed: 1, unknown: 0 }],
      ['outside', 'B', { calls: 2, acknowledged: 1, refused: 1, failed: 0, unknown: 0 }],
      ['outside', 'A', { calls: 0, acknowledged: 0, refused: 0, failed: 0, unknown: 0 }],
    ]);
    const report = renderSoakReport(tallies, checkWrites([], new Set()), T0);
    expect(report).toMatch(
      /\| kill idp at \+30 s, back in 3\.0 s +\| +B \| +2 \| +0 \| +0 \| +1 \| +1 \|/,
    );
    expect(report).toContain(
      'kill idp at +30 s, back in 3.0 s, area B: failed: token, applied no ×1; unknown: timeout, applied unknown ×1',
    );
  });

  it('checks every write against the IdP: acknowledged ones hold, refused or failed ones did not happen', () => {
    const writes: WriteRecord[] = [
      { area: 'B', op: 'create', userName: 'kept', class: 'acknowledged' },
      { area: 'B', op: 'create', userName: 'gone-later', class: 'acknowledged' },
      { area: 'B', op: 'delete', userName: 'gone-later', class: 'acknowledged' },
      { area: 'A', op: 'create', userName: 'vanished', class: 'acknowledged' },
      { area: 'A', op: 'create', userName: 'undeleted', class: 'acknowledged' },
      { area: 'A', op: 'delete', userName: 'undeleted', class: 'acknowledged' },
      { area: 'B', op: 'create', userName: 'said-no', class: 'failed' },
      { area: 'B', op: 'create', userName: 'maybe', class: 'unknown' },
      { area: 'B', op: 'create', userName: 'refused', class: 'refused' },
    ];
    const check = checkWrites(writes, new Set(['kept', 'undeleted', 'said-no', 'maybe']));
    expect(check.acknowledged).toEqual({
      A: { create: 2, delete: 1 },
      B: { create: 2, delete: 1 },
    });
    expect(check.lost.map((w) => `${w.op} ${w.userName}`)).toEqual([
      'create vanished',
      'delete undeleted',
    ]);
    expect(check.appliedAnyway.map((w) => w.userName)).toEqual(['said-no']);
    expect(check.unknown).toEqual({ applied: 1, notApplied: 0 });
  });
});
