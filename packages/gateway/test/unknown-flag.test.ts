import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../src/bin.ts', import.meta.url));

function runGateway(args: string[]) {
  return spawnSync(process.execPath, ['--import', 'tsx', BIN, ...args], {
    encoding: 'utf8',
    timeout: 15_000,
  });
}

// A command line the gateway cannot read is a configuration error, as in every other service:
// exit 2 (runMain's contract for ConfigError), the offending flag named, nothing started.
describe('the gateway command refuses flags it does not know', () => {
  it.each([
    [['serve', '--bogus'], "'--bogus'"],
    [['serve', '--config'], '--config <value>'],
    [['migrate', '--bogus', '--data-dir', 'x'], "'--bogus'"],
  ])('%j exits 2 naming the flag', (args, named) => {
    const result = runGateway(args);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('Invalid configuration');
    expect(result.stderr).toContain(named);
    expect(result.stderr).not.toMatch(/^\s+at /m);
  });
});
