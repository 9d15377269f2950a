import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { useTempDir } from '@mcp-identity/common/testing';
import { describe, expect, it } from 'vitest';
import { runIdpCommand as idp } from './helpers.js';

const tempDir = useTempDir('idp-cli-process-');

describe('idp commands as processes', () => {
  it('commands on a directory without an IdP say so, fail, and create nothing', async () => {
    const typo = join(tempDir(), 'typo');
    for (const args of [
      ['apps', 'list'],
      ['apps', 'delete', 'x'],
      ['apps', 'rotate-secret', 'x'],
      ['keys', 'rotate'],
      ['resources', 'list'],
      ['resources', 'delete', 'https://x.example/'],
    ]) {
      const result = await idp([...args, '--data-dir', typo]);
      expect(result.code, args.join(' ')).not.toBe(0);
      expect(result.stderr).toContain(`${typo} holds no IdP`);
      expect(result.stdout).toBe('');
      expect(existsSync(typo)).toBe(false);
    }
  }, 60_000);

  it('serve names the file and the key path of a mistyped bootstrap key', async () => {
    const dir = tempDir();
    const file = join(dir, 'idp.yaml');
    await writeFile(
      file,
      [
        'applications:',
        '  - nmae: backend',
        '    scopes: "*"',
        'roles:',
        '  - displayName: admin',
        '    permisions: "*"',
        'apiResources:',
        '  - identifier: https://localhost:8443/scim/mcp',
        '    name: gateway',
        '    scopes: internal_user_mgt_list',
        '',
      ].join('\n'),
    );
    const result = await idp([
      'serve',
      '--http',
      '--port',
      '0',
      '--data-dir',
      join(dir, 'data'),
      '--bootstrap',
      file,
    ]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(`Bootstrap file ${file} is invalid`);
    expect(result.stderr).toContain('applications[0].nmae: unknown key');
    expect(result.stderr).toContain('applications[0].name: is required');
    expect(result.stderr).toContain('roles[0].permisions: unknown key');
    expect(result.stderr).toContain('apiResources[0].scopes: must be array');
    expect(result.stderr).not.toContain('Cannot read properties');
  }, 30_000);

  it('adds and lists API resources', async () => {
    const dataDir = tempDir();
    const added = await idp([
      'resources',
      'add',
      '--identifier',
      'https://localhost:8443/scim/mcp',
      '--name',
      'SCIM MCP gateway',
      '--scopes',
      'internal_user_mgt_list,internal_user_mgt_view',
      '--dynamic-clients',
      '--data-dir',
      dataDir,
    ]);
    expect(added.code, added.stderr).toBe(0);
    const listed = await idp(['resources', 'list', '--data-dir', dataDir]);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([
      {
        identifier: 'https://localhost:8443/scim/mcp',
        name: 'SCIM MCP gateway',
        scopes: ['internal_user_mgt_list', 'internal_user_mgt_view'],
        dynamicClients: true,
        applications: [],
      },
    ]);
    const bad = await idp([
      'resources',
      'add',
      '--identifier',
      'https://localhost:8443/scim/mcp#frag',
      '--name',
      'x',
      '--data-dir',
      dataDir,
    ]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('fragment');
  }, 60_000);
});
