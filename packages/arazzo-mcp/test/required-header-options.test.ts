import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseCommandLine } from '@mcp-identity/arazzo-mcp';
import { ConfigError } from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
import { describe, expect, it } from 'vitest';
import { BIN_ARGS } from './support/serve-bin.js';

const tempDir = useTempDir('arazzo-mcp-required-header-');
const SERVE = ['serve', '--arazzo', 'w.arazzo.yaml', '--require-header', 'X-Gateway-Auth'];

function problemOf(argv: string[], env: Record<string, string | undefined>): string {
  try {
    parseCommandLine(argv, env);
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error('expected a configuration error');
}

describe('serve --require-header: where the value comes from', () => {
  it('reads the value from ARAZZO_MCP_REQUIRED_HEADER_VALUE', () => {
    const command = parseCommandLine(SERVE, { ARAZZO_MCP_REQUIRED_HEADER_VALUE: ' s3cret \n' });
    expect(command).toMatchObject({
      options: { requiredHeader: { name: 'X-Gateway-Auth', value: 's3cret' } },
    });
  });

  it('reads the first line of --require-header-file, trimmed, over the environment', () => {
    const file = join(tempDir(), 'secret');
    writeFileSync(file, '  from-file \r\nsecond line\n');
    const command = parseCommandLine([...SERVE, '--require-header-file', file], {
      ARAZZO_MCP_REQUIRED_HEADER_VALUE: 'from-env',
    });
    expect(command).toMatchObject({
      options: { requiredHeader: { name: 'X-Gateway-Auth', value: 'from-file' } },
    });
  });

  it('leaves /mcp open without the flag', () => {
    const command = parseCommandLine(['serve', '--arazzo', 'w.arazzo.yaml'], {
      ARAZZO_MCP_REQUIRED_HEADER_VALUE: 'ignored',
    });
    expect(command).toMatchObject({ options: { requiredHeader: undefined } });
  });

  it('refuses a missing or empty secret source, a bad header name and stdio', () => {
    expect(problemOf(SERVE, {})).toContain('ARAZZO_MCP_REQUIRED_HEADER_VALUE');
    expect(problemOf(SERVE, { ARAZZO_MCP_REQUIRED_HEADER_VALUE: '  ' })).toContain(
      'is not set or empty',
    );
    const empty = join(tempDir(), 'empty');
    writeFileSync(empty, '\nsecret on the second line\n');
    expect(problemOf([...SERVE, '--require-header-file', empty], {})).toContain(
      `the first line of ${empty} is empty`,
    );
    const missing = join(tempDir(), 'missing');
    expect(problemOf([...SERVE, '--require-header-file', missing], {})).toContain(
      `cannot read ${missing} (ENOENT)`,
    );
    expect(
      problemOf(['serve', '--arazzo', 'w.yaml', '--require-header', 'Bad Name'], {
        ARAZZO_MCP_REQUIRED_HEADER_VALUE: 'x',
      }),
    ).toContain('requireHeader');
    expect(
      problemOf([...SERVE, '--transport', 'stdio'], { ARAZZO_MCP_REQUIRED_HEADER_VALUE: 'x' }),
    ).toContain('needs --transport http');
    expect(
      problemOf(['serve', '--arazzo', 'w.yaml', '--require-header-file', empty], {}),
    ).toContain('needs --require-header');
  });

  it('makes the bin exit 2 with the problem named, never starting an open server', async () => {
    const child = spawn(process.execPath, [...BIN_ARGS, ...SERVE, '--port', '0'], {
      env: { PATH: process.env.PATH ?? '' },
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const [code] = await once(child, 'exit');
    expect(code).toBe(2);
    expect(stderr).toContain(
      'requireHeader (env var ARAZZO_MCP_REQUIRED_HEADER_VALUE): is not set or empty',
    );
  }, 30_000);
});
