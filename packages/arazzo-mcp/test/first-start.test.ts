import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { useTempDir } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_ENV, startFixtureApi, writeFixtures } from './support/fixture-api.js';

const BIN = fileURLToPath(new URL('../src/bin.ts', import.meta.url));
const REGISTER_SOURCES = fileURLToPath(new URL('./support/register-sources.mjs', import.meta.url));
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

/** Runs `serve --auth builtin` until it listens; resolves to its URL and what it printed. */
async function startBin(): Promise<{ url: string; stdout: () => string; stop(): Promise<void> }> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--import',
      REGISTER_SOURCES,
      BIN,
      'serve',
      '--auth',
      'builtin',
      '--arazzo',
      arazzo,
      '--port',
      '0',
      '--data-dir',
      dataDir,
    ],
    { env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info', ...FIXTURE_ENV } },
  );
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const url = await new Promise<string>((resolve, reject) => {
    const check = () => {
      const match = /"url":"(http:\/\/[^"]+)\/mcp","msg":"arazzo-mcp listening"/.exec(stdout);
      if (match?.[1]) resolve(match[1]);
    };
    child.stdout.on('data', check);
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${stderr}`)));
  });
  return {
    url,
    stdout: () => stdout,
    async stop() {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
      children.delete(child);
    },
  };
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
