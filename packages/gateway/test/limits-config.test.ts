import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ConfigError } from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
import { loadConfigFile, resolveConfig } from '@mcp-identity/gateway';
import { describe, expect, it } from 'vitest';
import { GATEWAY_BIN, writeGatewayConfig } from './fixtures/gateway-process.js';

const tempDir = useTempDir('gw-limits-config-');

function problemsOf(fn: () => unknown): Array<{ key: string; message: string; source: string }> {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems.map(({ key, message, source }) => ({
      key,
      message,
      source,
    }));
  }
  throw new Error('expected a ConfigError');
}

describe('[ratelimit] and [secrets]', () => {
  it('reads both from the file, a relative directory against the file, with secure defaults', () => {
    const dir = tempDir();
    const file = join(dir, 'gateway.toml');
    writeFileSync(
      file,
      `[ratelimit]
redis_url = "rediss://:pw@cache.internal:6380/0"

[secrets]
env_prefixes = ["MCP_UPSTREAM_", "VAULT_"]
directory = "secrets"
`,
    );
    const config = loadConfigFile(file);
    expect(config.rateLimit).toEqual({ redisUrl: 'rediss://:pw@cache.internal:6380/0' });
    expect(config.secrets).toEqual({
      envPrefixes: ['MCP_UPSTREAM_', 'VAULT_'],
      directory: join(dir, 'secrets'),
    });
    const defaults = resolveConfig({}, { env: {} });
    expect(defaults.rateLimit).toEqual({});
    expect(defaults.secrets).toEqual({ envPrefixes: ['GATEWAY_SECRET_'] });
  });

  it('takes the environment over the file', () => {
    const config = resolveConfig(
      { ratelimit: { redis_url: 'redis://file:6379' }, secrets: { env_prefixes: ['FILE_'] } },
      {
        env: {
          GATEWAY_RATELIMIT_REDIS_URL: 'redis://env:6379',
          GATEWAY_SECRETS_ENV_PREFIXES: 'A_, B_,',
          GATEWAY_SECRETS_DIR: 'run/secrets',
        },
      },
    );
    expect(config.rateLimit.redisUrl).toBe('redis://env:6379');
    expect(config.secrets).toEqual({
      envPrefixes: ['A_', 'B_'],
      directory: resolve('run/secrets'),
    });
  });

  it('names the key and where a bad value came from', () => {
    const problems = problemsOf(() =>
      resolveConfig(
        { secrets: { env_prefixes: ['GATEWAY_', 'not a name'], colour: 'red' } },
        { env: { GATEWAY_RATELIMIT_REDIS_URL: 'http://cache:6379' }, source: 'file gw.toml' },
      ),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        {
          key: 'ratelimit.redis_url',
          message: expect.stringContaining('rediss?://'),
          source: 'environment variable GATEWAY_RATELIMIT_REDIS_URL',
        },
        {
          key: 'secrets.env_prefixes[0]',
          message:
            "would let a secretRef read GATEWAY_DATABASE_URL, the gateway's own configuration",
          source: 'file gw.toml',
        },
        expect.objectContaining({ key: 'secrets.env_prefixes[1]', source: 'file gw.toml' }),
        expect.objectContaining({ key: 'secrets.colour', message: 'unknown key' }),
      ]),
    );
    expect(
      problemsOf(() => resolveConfig({}, { env: { GATEWAY_SECRETS_ENV_PREFIXES: 'GATEWAY_S' } })),
    ).toEqual([
      {
        key: 'secrets.env_prefixes[0]',
        message: expect.stringMatching(/^would let a secretRef read GATEWAY_SECRETS_/),
        source: 'environment variable GATEWAY_SECRETS_ENV_PREFIXES',
      },
    ]);
  });

  it('makes `gateway serve` exit 1, naming the host but not the password, when Redis cannot be reached', async () => {
    const config = await writeGatewayConfig(tempDir());
    const result = spawnSync(
      process.execPath,
      [GATEWAY_BIN, 'serve', '--config', config, '--workers', '1'],
      {
        encoding: 'utf8',
        timeout: 20_000,
        env: { ...process.env, GATEWAY_RATELIMIT_REDIS_URL: 'redis://:s3cret-pw@127.0.0.1:1/0' },
      },
    );
    expect(result.status).toBe(1);
    expect(`${result.stdout}${result.stderr}`).toContain(
      'cannot reach the rate-limit store (Redis at 127.0.0.1:1)',
    );
    expect(`${result.stdout}${result.stderr}`).not.toContain('s3cret-pw');
  });
});
