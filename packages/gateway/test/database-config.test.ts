import { spawnSync } from 'node:child_process';
import { ConfigError } from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
import { resolveConfig } from '@mcp-identity/gateway';
import { describe, expect, it } from 'vitest';
import { GATEWAY_BIN, writeGatewayConfig } from './fixtures/gateway-process.js';

const tempDir = useTempDir('gw-dbconfig-');

describe('database configuration', () => {
  it('takes database.url and reconcile_interval from the file, the URL also from an override', () => {
    const config = resolveConfig({
      database: { url: 'postgres://gw@db.internal:5432/gateway', reconcile_interval: '2s' },
    });
    expect(config.database).toEqual({
      url: 'postgres://gw@db.internal:5432/gateway',
      reconcileIntervalMs: 2_000,
    });
    expect(resolveConfig({}).database).toEqual({ reconcileIntervalMs: 5_000 });
    const overridden = resolveConfig(
      { database: { url: 'postgres://file/db' } },
      { databaseUrl: 'postgresql://flag/db' },
    );
    expect(overridden.database.url).toBe('postgresql://flag/db');
  });

  it('names the key of a bad URL or interval', () => {
    const problems = (raw: unknown, options = {}) => {
      try {
        resolveConfig(raw, options);
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as Error).message;
      }
      return '';
    };
    expect(problems({ database: { url: 'mysql://db/gateway' } })).toContain('database.url');
    expect(problems({ database: { reconcile_interval: '10ms' } })).toContain(
      'database.reconcile_interval',
    );
    expect(problems({ database: { uri: 'postgres://db' } })).toContain('database.uri');
    expect(problems({}, { databaseUrl: 'sqlite:gateway.db' })).toContain('database.url');
  });

  it('makes `gateway serve` exit 2 on a bad GATEWAY_DATABASE_URL', async () => {
    const config = await writeGatewayConfig(tempDir());
    const result = spawnSync(process.execPath, [GATEWAY_BIN, 'serve', '--config', config], {
      encoding: 'utf8',
      timeout: 15_000,
      env: { ...process.env, GATEWAY_DATABASE_URL: 'file:///tmp/gateway.db' },
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('database.url');
  });

  it('fails to start, without printing the password, when PostgreSQL cannot be reached', async () => {
    const config = await writeGatewayConfig(tempDir());
    const result = spawnSync(
      process.execPath,
      [
        GATEWAY_BIN,
        'serve',
        '--config',
        config,
        '--database-url',
        'postgres://gw:s3cret-pw@127.0.0.1:1/gateway',
      ],
      { encoding: 'utf8', timeout: 15_000 },
    );
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('cannot use the PostgreSQL database 127.0.0.1:1/gateway');
    expect(`${result.stdout}${result.stderr}`).not.toContain('s3cret-pw');
  });
});
