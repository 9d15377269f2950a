import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { useTempDir } from '@mcp-identity/common/testing';
import { beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const repository = new URL('../../../', import.meta.url).pathname;
const tempDir = useTempDir('mcp-identity-pack-');

/** The packages a user installs; `bench` is the repository's own and is never packed. */
const WORKSPACES = [
  'packages/common',
  'packages/oauth',
  'packages/arazzo',
  'packages/arazzo-mcp',
  'packages/gateway',
  'packages/idp',
  'packages/cli',
  'workflows/scim',
];

const version = (workspace: string): string =>
  JSON.parse(readFileSync(join(repository, workspace, 'package.json'), 'utf8')).version;

// Installing from the packed tarballs, without the repository, is what a user does: the packages
// come from the registry (or npm's cache). Install scripts are skipped so better-sqlite3 is not
// compiled; nothing below opens a database.
describe('the packed packages, installed into a fresh project', () => {
  let packs: string;
  let project: string;

  beforeAll(async () => {
    packs = tempDir();
    project = tempDir();
    const packed = await run(
      'npm',
      ['pack', '--json', '--pack-destination', packs, ...WORKSPACES.map((w) => `--workspace=${w}`)],
      { cwd: repository },
    );
    const tarballs = (JSON.parse(packed.stdout) as { filename: string }[]).map((p) =>
      join(packs, p.filename),
    );
    mkdirSync(project, { recursive: true });
    writeFileSync(join(project, 'package.json'), '{"name":"packed-install","private":true}\n');
    await run(
      'npm',
      ['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', ...tarballs],
      { cwd: project, timeout: 200_000 },
    );
  }, 240_000);

  const npx = (...args: string[]) => run('npx', ['--no-install', ...args], { cwd: project });

  it.each([
    ['mcp-identity', 'packages/cli'],
    ['mcp-identity-gateway', 'packages/gateway'],
    ['mcp-identity-idp', 'packages/idp'],
    ['arazzo-mcp', 'packages/arazzo-mcp'],
  ])('%s --version prints its package version', async (command, workspace) => {
    const { stdout } = await npx(command, '--version');
    expect(stdout.trim()).toBe(version(workspace));
  });

  it('mcp-identity passes --version through to a service command', async () => {
    const { stdout } = await npx('mcp-identity', 'gateway', '--version');
    expect(stdout.trim()).toBe(version('packages/gateway'));
  });

  it('ships the SCIM tool pack where the CLI resolves it, and it validates', async () => {
    const cli = join(project, 'node_modules/@mcp-identity/cli/dist/stack/locations.js');
    const { stdout } = await run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const m = await import(${JSON.stringify(cli)}); console.log(m.SCIM_ARAZZO_FILE);`,
      ],
      { cwd: project },
    );
    const arazzo = stdout.trim();
    expect(arazzo).toBe(join(project, 'node_modules/@mcp-identity/scim-tools/scim.arazzo.yaml'));
    await expect(npx('arazzo-mcp', 'validate', '--arazzo', arazzo)).resolves.toBeDefined();
  });

  it('leaves the test helpers and their test-runner peers out of common', () => {
    const common = join(project, 'node_modules/@mcp-identity/common');
    expect(readdirSync(join(common, 'dist'))).not.toContain('testing');
    const manifest = JSON.parse(readFileSync(join(common, 'package.json'), 'utf8'));
    expect(manifest.peerDependencies ?? {}).toEqual({});
    expect(readdirSync(join(project, 'node_modules'))).not.toContain('vitest');
  });

  const logHello = () =>
    run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { createLogger } from '@mcp-identity/common';
         createLogger({ name: 'packed', pretty: true }).info('hello');`,
      ],
      { cwd: project },
    );

  it('installs pino-pretty with the packages, so --log-format pretty prints readable lines', async () => {
    const { stdout } = await logHello();
    expect(stdout).toMatch(/INFO \(packed\/\d+\): hello/);
    expect(() => JSON.parse(stdout.trim())).toThrow();
  });

  it('logs JSON lines when an install left pino-pretty out, even when asked for pretty output', async () => {
    // What `npm install --omit=optional` gives: the optional dependency is not there.
    rmSync(join(project, 'node_modules/pino-pretty'), { recursive: true });
    const { stdout } = await logHello();
    expect(JSON.parse(stdout.trim())).toMatchObject({ name: 'packed', msg: 'hello' });
  });
});
