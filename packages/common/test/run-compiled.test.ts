import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const runCompiled = new URL('../bin/run-compiled.js', import.meta.url).href;

/** Runs a command shim like the packages' bin files, its entry point at `entry`. */
function shim(dir: string, entry: string) {
  const file = path.join(dir, 'shim.mjs');
  const source = `import { runCompiled } from ${JSON.stringify(runCompiled)};
runCompiled('demo', new URL(${JSON.stringify(entry)}, import.meta.url));
`;
  return writeFile(file, source).then(() =>
    run(process.execPath, [file]).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    ),
  );
}

describe('the command shim', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'run-compiled-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('runs the compiled entry point', async () => {
    await writeFile(path.join(dir, 'built.mjs'), "process.stdout.write('ran');\n");
    const result = await shim(dir, './built.mjs');
    expect(result).toMatchObject({ code: 0, stdout: 'ran' });
  });

  it('says how to build when the entry point is not compiled yet, and exits 1', async () => {
    const result = await shim(dir, './dist/bin.js');
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'demo is not built yet: run `npm run build` at the repository root.\n',
    );
  });
});
