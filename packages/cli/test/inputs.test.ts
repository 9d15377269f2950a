import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readStackSecrets, StackSecretsError } from '../src/stack/secrets.js';
import { runCli } from './support/cli-process.js';

describe('inputs checked against their shape', () => {
  it('`call` refuses --args that are not a JSON object, before looking for a stack', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'cli-args-'));
    for (const args of ['[1]', '"text"', 'null']) {
      const result = await runCli(['call', 'search_users', '--args', args], { cwd });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain("--args must be a JSON object of the tool's arguments");
    }
  });

  it('refuses a stored credentials file of the wrong shape, naming each entry, echoing no secret', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cli-secrets-'));
    writeFileSync(
      join(dataDir, 'stack-secrets.json'),
      JSON.stringify({
        clientApp: { clientId: 'mcp-client-x', clientSecret: 42 },
        gatewayAdmin: 'hunter2-not-an-object',
      }),
    );
    expect(() => readStackSecrets(dataDir)).toThrow(
      new StackSecretsError(
        `Cannot read ${join(dataDir, 'stack-secrets.json')}: its content is invalid:\n` +
          '  /clientApp/clientSecret: must be string\n' +
          '  /gatewayAdmin: must be object',
      ),
    );
  });

  it('reads the entries an older version stored, each complete', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cli-secrets-'));
    const clientApp = { clientId: 'mcp-client-x', clientSecret: 's3cret' };
    writeFileSync(join(dataDir, 'stack-secrets.json'), JSON.stringify({ clientApp }));
    expect(readStackSecrets(dataDir)).toEqual({ clientApp });
  });
});
