import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const FIXTURE = fileURLToPath(new URL('./fixtures/dropped-statements.cjs', import.meta.url));
// The driver the IdP itself loads (the stores and the search worker resolve it the same way).
const DRIVER = createRequire(fileURLToPath(new URL('../src/store/db.ts', import.meta.url))).resolve(
  'better-sqlite3',
);

function run(): Promise<{ code: number | null; signal: string | null; output: string }> {
  const child = spawn(process.execPath, [FIXTURE, DRIVER], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  return new Promise((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal, output }));
  });
}

// Node.js 24.19.0 to 24.21.x abort the process (`Assertion failed: (env) != nullptr` in
// node::RemoveEnvironmentCleanupHook) when V8 collects a better-sqlite3 statement while no
// JavaScript context is entered (nodejs/node#65446), even after the database is closed; 24.22.0
// fixed it, and engines excludes those releases. This runs on every line CI tests.
describe(`the SQLite driver on Node.js ${process.version}`, () => {
  it('a process that drops thousands of statements and closes its database exits 0', async () => {
    const result = await run();
    expect(result.output).not.toContain('Assertion failed');
    expect(result).toMatchObject({ code: 0, signal: null });
    expect(result.output).toBe('done\n');
  });
});
