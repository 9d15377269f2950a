import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useTempDir } from '@mcp-identity/common/testing';
import { runIdpCli } from '@mcp-identity/idp';
import { afterEach, describe, expect, it, vi } from 'vitest';

const tempDir = useTempDir('idp-validate-');

/** `mcp-identity-idp validate --bootstrap <file>` in-process: exit code, stdout, stderr. */
async function validate(yaml: string) {
  const file = join(tempDir(), 'bootstrap.yaml');
  writeFileSync(file, yaml);
  const out = { stdout: '', stderr: '' };
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    out.stdout += String(chunk);
    return true;
  });
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    out.stderr += String(chunk);
    return true;
  });
  const code = await runIdpCli(['validate', '--bootstrap', file]);
  vi.restoreAllMocks();
  return { code, ...out };
}

describe('mcp-identity-idp validate --bootstrap', () => {
  afterEach(() => vi.restoreAllMocks());

  it('accepts a valid bootstrap file', async () => {
    const result = await validate(
      'applications:\n  - name: backend\n    grantTypes: [client_credentials]\n    scopes: "*"\n',
    );
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(/bootstrap\.yaml: valid\n$/);
  });

  // Each bad file, and what its report must name.
  const table: [what: string, yaml: string, names: string[]][] = [
    ['an unknown section', 'aplications: []\n', ['aplications']],
    [
      'an unknown grant type',
      'applications:\n  - name: a\n    grantTypes: [password]\n',
      ['applications[0].grantTypes[0]'],
    ],
    ['a group without a name', 'groups:\n  - members: [alice]\n', ['groups[0]']],
    [
      'two problems at once',
      'roles:\n  - displayName: r\n    permisions: "*"\napiResources:\n  - name: x\n',
      ['roles[0]', 'apiResources[0]'],
    ],
    ['a file that is not YAML', 'applications: [\n', ['not valid YAML']],
    ['a list instead of a mapping', '- a\n', ['must be a YAML mapping']],
  ];

  it.each(table)('names %s, exit 2', async (_what, yaml, names) => {
    const result = await validate(yaml);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    for (const name of names) expect(result.stderr).toContain(name);
  });
});
