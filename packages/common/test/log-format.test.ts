import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const COMMON = fileURLToPath(new URL('../dist/index.js', import.meta.url));

/** One line logged by a child process (stdout a pipe, not a terminal) with LOG_FORMAT set. */
function logOnce(format: string | undefined): string {
  const script = `import(${JSON.stringify(COMMON)}).then(({ createLogger }) =>
    createLogger({ name: 'svc' }).info({ port: 5000 }, 'started'))`;
  const { PATH, HOME } = process.env;
  const result = spawnSync(process.execPath, ['-e', script], {
    encoding: 'utf8',
    env: { PATH, HOME, ...(format === undefined ? {} : { LOG_FORMAT: format }) },
    timeout: 15_000,
  });
  expect(result.stderr).toBe('');
  return result.stdout;
}

describe('LOG_FORMAT (each service’s --log-format)', () => {
  it('pretty: a human-readable line with a clock time, even when stdout is no terminal', () => {
    const out = logOnce('pretty');
    expect(out).toMatch(/^\[\d\d:\d\d:\d\d\] INFO \(svc\/\d+\): started\n/);
    expect(out).toContain('port: 5000');
  });

  it('json: one JSON line, as by default when stdout is no terminal', () => {
    for (const format of ['json', undefined]) {
      const line = JSON.parse(logOnce(format)) as Record<string, unknown>;
      expect(line).toMatchObject({ name: 'svc', msg: 'started', port: 5000, level: 30 });
    }
  });
});
