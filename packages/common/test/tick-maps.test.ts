import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

describe('pinTickObjectMaps', () => {
  it("keeps nextTick's queue entries on one map through full collections while none is queued", () => {
    const fixture = join(import.meta.dirname, 'fixtures/tick-maps-cli.ts');
    const result = spawnSync(
      process.execPath,
      ['--expose-gc', '--allow-natives-syntax', '--import', 'tsx', fixture],
      { encoding: 'utf8', timeout: 30_000 },
    );
    expect(result.stderr).toBe('');
    expect(JSON.parse(result.stdout)).toEqual({ pinned: true, sameMap: true });
  });
});
