import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { moduleOf, summariseCpuProfile } from '../src/kit/cpu-profile.js';

const dir = mkdtempSync(join(tmpdir(), 'cpu-profile-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const frame = (functionName: string, url: string, lineNumber = 0) => ({
  functionName,
  url,
  lineNumber,
});

/**
 * root → forward (gateway/data-plane.js) → writevGeneric (node core) → writev (native)
 *      → (idle)
 *      → actualWrite (npm sonic-boom) → writeString (native)
 */
function writeProfile(samples: number[], timeDeltas: number[]): string {
  const file = join(dir, `${samples.join('-')}-${timeDeltas.join('-')}.cpuprofile`);
  writeFileSync(
    file,
    JSON.stringify({
      nodes: [
        { id: 1, callFrame: frame('(root)', ''), children: [2, 5, 6] },
        {
          id: 2,
          callFrame: frame('forward', 'file:///repo/packages/gateway/dist/data-plane.js', 111),
          children: [3],
        },
        {
          id: 3,
          callFrame: frame('writevGeneric', 'node:internal/stream_base_commons', 122),
          children: [4],
        },
        { id: 4, callFrame: frame('writev', '') },
        { id: 5, callFrame: frame('(idle)', '') },
        {
          id: 6,
          callFrame: frame('actualWrite', 'file:///repo/node_modules/sonic-boom/index.js', 635),
          children: [7],
        },
        { id: 7, callFrame: frame('writeString', '') },
      ],
      startTime: 1_000_000,
      samples,
      timeDeltas,
    }),
  );
  return file;
}

describe('CPU profile summary', () => {
  it('names modules by npm package, Node.js core module or workspace file', () => {
    expect(moduleOf(frame('x', 'file:///a/node_modules/@scope/pkg/lib/x.js'))).toBe(
      'npm:@scope/pkg',
    );
    expect(moduleOf(frame('x', 'file:///a/node_modules/undici/lib/x.js'))).toBe('npm:undici');
    expect(moduleOf(frame('x', 'node:events'))).toBe('node:events');
    expect(moduleOf(frame('x', 'file:///r/packages/gateway/dist/auth/verifier.js'))).toBe(
      'gateway/auth/verifier.js',
    );
    expect(moduleOf(frame('(garbage collector)', ''))).toBe('(garbage collector)');
  });

  it('charges native frames to their JavaScript caller and to the nearest non-core frame', () => {
    // Three samples in writev, one in sonic-boom's writeString, one idle; 1 ms apart.
    const summary = summariseCpuProfile(
      writeProfile([4, 4, 4, 7, 5], [1000, 1000, 1000, 1000, 1000]),
    );
    expect(summary.busyMs).toBeCloseTo(4);
    expect(summary.idleMs).toBeCloseTo(1);
    expect(summary.functions[0]).toMatchObject({
      name: 'writev (native) ← writevGeneric node:internal/stream_base_commons',
      share: 0.75,
    });
    expect(summary.callers.map((c) => [c.name, c.share])).toEqual([
      ['forward gateway/data-plane.js:112', 0.75],
      ['actualWrite npm:sonic-boom:636', 0.25],
    ]);
    const inclusive = new Map(summary.inclusiveModules.map((m) => [m.name, m.share]));
    expect(inclusive.get('gateway/data-plane.js')).toBe(0.75);
    expect(inclusive.get('node:internal/stream_base_commons')).toBe(0.75);
    expect(inclusive.get('npm:sonic-boom')).toBe(0.25);
  });

  it('weighs every sample alike, so a long delta after preemption does not inflate one frame', () => {
    const summary = summariseCpuProfile(writeProfile([4, 7, 7, 7], [1000, 50_000, 1000, 1000]));
    const byName = new Map(summary.functions.map((f) => [f.name.split(' ')[0], f.share]));
    expect(byName.get('writev')).toBe(0.25);
    expect(byName.get('writeString')).toBe(0.75);
  });

  it('keeps only the samples inside the window, and falls back to all when none is in it', () => {
    // Sample times: 1.001 s, 1.002 s, 1.003 s, 1.004 s (startTime 1 s).
    const file = writeProfile([7, 7, 4, 4], [1000, 1000, 1000, 1000]);
    const windowed = summariseCpuProfile(file, { window: { fromUs: 1_002_500, toUs: 1_004_000 } });
    expect(windowed.windowed).toBe(true);
    expect(windowed.functions.map((f) => [f.name.split(' ')[0], f.share])).toEqual([['writev', 1]]);
    const outside = summariseCpuProfile(file, { window: { fromUs: 0, toUs: 10 } });
    expect(outside.windowed).toBe(false);
    expect(outside.busyMs).toBeCloseTo(4);
  });
});
