import type { ChildProcess } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { useTempDir } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_ENV, startFixtureApi, writeFixtures } from './support/fixture-api.js';
import { type ServedBin, spawnServe } from './support/serve-bin.js';

const tempDir = useTempDir('arazzo-mcp-first-start-');
const children = new Set<ChildProcess>();
let arazzo: string;
let dataDir: string;

beforeAll(async () => {
  const api = await startFixtureApi();
  arazzo = writeFixtures(tempDir(), api.url).users;
  dataDir = join(tempDir(), 'area-a');
});

afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
});

/** Runs `serve --auth builtin` until it listens. */
async function startBin(): Promise<ServedBin> {
  const served = await spawnServe(
    ['--auth', 'builtin', '--arazzo', arazzo, '--port', '0', '--data-dir', dataDir],
    FIXTURE_ENV,
  );
  children.add(served.child);
  return served;
}

async function login(url: string, email: string, password: string) {
  return fetch(`${url}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
}

describe('serve --auth builtin (the bin, spawned): first start', () => {
  it('creates one account, prints its password once, and keeps account and key on restart', async () => {
    const first = await startBin();
    const printed =
      /^Created the first account: admin@localhost\nPassword \(shown only this once\): (\S+)$/m.exec(
        first.stdout(),
      );
    expect(printed).not.toBeNull();
    const password = printed?.[1] ?? '';
    // Printed to stdout once, and never into a log line.
    expect(first.stdout().split(password)).toHaveLength(2);
    const response = await login(first.url, 'admin@localhost', password);
    expect(response.status).toBe(200);
    const jwks = await (await fetch(`${first.url}/oauth/jwks`)).json();
    await first.stop();
    expect(statSync(join(dataDir, 'signing-key.json')).mode & 0o077).toBe(0);

    const second = await startBin();
    expect(second.stdout()).not.toContain('Created the first account');
    expect(second.stdout()).not.toContain('Password');
    expect((await login(second.url, 'admin@localhost', password)).status).toBe(200);
    // The signing key was reloaded from the data directory, not made anew.
    expect(await (await fetch(`${second.url}/oauth/jwks`)).json()).toEqual(jwks);
    await second.stop();
  }, 60_000);
});
