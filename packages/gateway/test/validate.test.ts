import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hashSecret } from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { GATEWAY_BIN } from './fixtures/gateway-process.js';

const tempDir = useTempDir('gw-validate-');
let hash = '';

/** Runs the gateway's command line on a TOML file; its exit code and output. */
function run(command: string, toml: string, extra: string[] = []) {
  const file = join(tempDir(), 'gateway.toml');
  writeFileSync(file, toml);
  const { PATH, HOME } = process.env;
  const result = spawnSync(process.execPath, [GATEWAY_BIN, command, '--config', file, ...extra], {
    encoding: 'utf8',
    env: { PATH, HOME },
    timeout: 20_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

const users = (passwordHash: string) => `
[[management.users]]
username = "admin"
password_hash = "${passwordHash}"
roles = ["admin"]
`;

describe('mcp-identity-gateway validate', () => {
  beforeAll(async () => {
    hash = await hashSecret('correct horse battery staple');
  });

  it('accepts a valid configuration and starts nothing', () => {
    const result = run('validate', `[listeners]\nhttp_port = 8080\n${users(hash)}`);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/gateway\.toml: valid\n$/);
  });

  // Each bad configuration, and the keys its report must name.
  const table: [what: string, toml: () => string, keys: string[]][] = [
    [
      'the guide’s placeholder hash',
      () => users('scrypt$...'),
      ['management.users[0].password_hash'],
    ],
    ['a plain password as the hash', () => users('hunter2'), ['management.users[0].password_hash']],
    [
      'a truncated hash',
      () => users(hash.split('$').slice(0, 5).join('$')),
      ['management.users[0].password_hash'],
    ],
    [
      'an N that is no power of 2',
      () => users(hash.replace('$32768$', '$1000$')),
      ['management.users[0].password_hash'],
    ],
    ['an unknown section', () => '[listener]\nport = 1\n', ['listener']],
    ['an unknown key', () => '[listeners]\nhttp_prot = 8080\n', ['listeners.http_prot']],
    ['a port out of range', () => '[listeners]\nhttps_port = 70000\n', ['listeners.https_port']],
    ['a bad duration', () => '[limits]\nidle_timeout = "soon"\n', ['limits.idle_timeout']],
    [
      'a gatewayurl that is no URL',
      () => '[policy_configurations.mcpauth_v1]\ngatewayurl = "mcp.example.com"\n',
      ['policy_configurations.mcpauth_v1.gatewayurl'],
    ],
    [
      'several problems at once',
      () => `[listeners]\nhttp_port = -1\n[limits]\nidle_timeout = "x"\n${users('scrypt$...')}`,
      ['listeners.http_port', 'limits.idle_timeout', 'management.users[0].password_hash'],
    ],
    ['a file that is not TOML', () => '[listeners\n', ['(file)']],
    [
      'a database URL of another kind',
      () => '[database]\nurl = "mysql://db/gw"\n',
      ['database.url'],
    ],
  ];

  it.each(table)('names the key of %s, exit 2', (_what, toml, keys) => {
    const result = run('validate', toml());
    expect(result.status).toBe(2);
    expect(result.stdout).toBe('');
    for (const key of keys) expect(result.stderr).toContain(`  - ${key} (file `);
  });

  it('serve refuses the placeholder hash the same way, before listening', () => {
    const result = run(
      'serve',
      `[listeners]\nhttp_port = 0\nhttps_port = 0\nmanagement_port = 0\n${users('scrypt$...')}`,
    );
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('  - management.users[0].password_hash (file ');
  });

  it('serve refuses a --log-format other than pretty or json', () => {
    const result = run('serve', users(hash), ['--log-format', 'xml']);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('  - log-format (flag --log-format): must be pretty or json');
  });
});
