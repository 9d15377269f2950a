import { CALL_CLASSES, type CallClass } from './call-class.js';
import { markdownTable } from './table.js';

/** Area B: tool calls through the gateway; Area A: through Area A's own /mcp. */
export type Area = 'A' | 'B';

export interface CallRecord {
  area: Area;
  endedAt: number;
  class: CallClass;
  why: string;
}

/** One kill: from the signal until the supervisor reports the service running again. */
export interface KillWindow {
  service: string;
  killedAt: number;
  backAt?: number;
}

/** A create or delete of one user, as its answer classified it. */
export interface WriteRecord {
  area: Area;
  op: 'create' | 'delete';
  userName: string;
  class: CallClass;
}

export type ClassCounts = Record<CallClass, number> & { calls: number };

export interface WindowTally {
  /** undefined: calls that ended outside every window. */
  window: KillWindow | undefined;
  area: Area;
  counts: ClassCounts;
  /** How many calls of each class ended for each reason ("failed: token, applied no" → 116). */
  reasons: Map<string, number>;
}

function emptyCounts(): ClassCounts {
  return { calls: 0, acknowledged: 0, refused: 0, failed: 0, unknown: 0 };
}

/**
 * Each call counted in the window it ended in (a call still failing `graceMs` after the
 * service is back counts against that kill), per area; the last rows are the calls outside
 * every window.
 */
export function tallyWindows(
  calls: CallRecord[],
  windows: KillWindow[],
  areas: Area[],
  graceMs: number,
): WindowTally[] {
  const tallies = [...windows, undefined].flatMap((window) =>
    areas.map((area): WindowTally => ({ window, area, counts: emptyCounts(), reasons: new Map() })),
  );
  for (const call of calls) {
    const window = windows.find(
      (w) =>
        call.endedAt >= w.killedAt &&
        (w.backAt === undefined || call.endedAt <= w.backAt + graceMs),
    );
    const tally = tallies.find((t) => t.window === window && t.area === call.area);
    if (!tally) continue;
    tally.counts.calls += 1;
    tally.counts[call.class] += 1;
    if (call.class !== 'acknowledged') {
      const reason = `${call.class}: ${call.why}`;
      tally.reasons.set(reason, (tally.reasons.get(reason) ?? 0) + 1);
    }
  }
  return tallies;
}

export interface WriteCheck {
  acknowledged: Record<Area, { create: number; delete: number }>;
  /** Acknowledged, yet not so at the IdP: a create whose user is missing, a delete whose user is there. */
  lost: WriteRecord[];
  /** Refused or failed (the answer said not applied), yet applied at the IdP. */
  appliedAnyway: WriteRecord[];
  unknown: { applied: number; notApplied: number };
}

/**
 * Every write against what the IdP holds afterwards (`existing`: the userNames there). A user
 * is created once and deleted at most once, after its create was acknowledged, so each
 * record's expected state at the end is its own.
 */
export function checkWrites(writes: WriteRecord[], existing: ReadonlySet<string>): WriteCheck {
  const check: WriteCheck = {
    acknowledged: { A: { create: 0, delete: 0 }, B: { create: 0, delete: 0 } },
    lost: [],
    appliedAnyway: [],
    unknown: { applied: 0, notApplied: 0 },
  };
  const maybeDeleted = new Set(
    writes
      .filter((w) => w.op === 'delete' && w.class !== 'refused' && w.class !== 'failed')
      .map((w) => w.userName),
  );
  for (const write of writes) {
    const present = existing.has(write.userName);
    // A create whose user a later delete may have removed is judged by that delete instead.
    const applied = write.op === 'create' ? present || maybeDeleted.has(write.userName) : !present;
    if (write.class === 'acknowledged') {
      check.acknowledged[write.area][write.op] += 1;
      if (!applied) check.lost.push(write);
    } else if (write.class === 'unknown') {
      check.unknown[applied ? 'applied' : 'notApplied'] += 1;
    } else if (applied) {
      check.appliedAnyway.push(write);
    }
  }
  return check;
}

function windowLabel(window: KillWindow | undefined, startedAt: number): string {
  if (!window) return 'outside kill windows';
  const at = ((window.killedAt - startedAt) / 1000).toFixed(0);
  const back =
    window.backAt === undefined
      ? 'not back'
      : `back in ${((window.backAt - window.killedAt) / 1000).toFixed(1)} s`;
  return `kill ${window.service} at +${at} s, ${back}`;
}

/** The soak's summary: per kill and area the calls of each class, why, and the write check. */
export function renderSoakReport(
  tallies: WindowTally[],
  check: WriteCheck,
  startedAt: number,
): string {
  const rows = tallies.map((tally, index) => [
    index > 0 && tallies[index - 1]?.window === tally.window
      ? ''
      : windowLabel(tally.window, startedAt),
    tally.area,
    String(tally.counts.calls),
    ...CALL_CLASSES.map((name) => String(tally.counts[name])),
  ]);
  const totals = (['B', 'A'] as const)
    .map((area) => {
      const counts = emptyCounts();
      for (const tally of tallies.filter((t) => t.area === area)) {
        for (const key of Object.keys(counts) as (keyof ClassCounts)[]) {
          counts[key] += tally.counts[key];
        }
      }
      return [area, counts] as const;
    })
    .filter(([, counts]) => counts.calls > 0)
    .map(([area, counts], index) => [
      index === 0 ? 'total' : '',
      area,
      String(counts.calls),
      ...CALL_CLASSES.map((name) => String(counts[name])),
    ]);
  const lines = [
    markdownTable(['window', 'area', 'calls', ...CALL_CLASSES], [...rows, ...totals]),
    '',
    'Why calls were not acknowledged:',
  ];
  for (const tally of tallies) {
    if (tally.reasons.size === 0) continue;
    const reasons = [...tally.reasons]
      .sort((a, b) => b[1] - a[1])
      .map(([reason, count]) => `${reason} ×${count}`)
      .join('; ');
    lines.push(`  ${windowLabel(tally.window, startedAt)}, area ${tally.area}: ${reasons}`);
  }
  const acknowledged = (['B', 'A'] as const)
    .map((area) => {
      const { create, delete: deletes } = check.acknowledged[area];
      return `area ${area} ${create} creates, ${deletes} deletes`;
    })
    .join('; ');
  lines.push(
    '',
    `IdP writes acknowledged: ${acknowledged}; lost ${check.lost.length}`,
    `Writes refused or failed yet applied at the IdP: ${check.appliedAnyway.length}`,
    `Writes of unknown outcome: ${check.unknown.applied} applied, ${check.unknown.notApplied} not applied`,
  );
  for (const write of [...check.lost, ...check.appliedAnyway]) {
    lines.push(`  ${write.class} ${write.op} of ${write.userName} (area ${write.area})`);
  }
  return lines.join('\n');
}
