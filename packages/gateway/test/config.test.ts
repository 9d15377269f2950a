import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
import { loadConfigFile, resolveConfig } from '@mcp-identity/gateway';
import { describe, expect, it } from 'vitest';

const tempDir = useTempDir('gw-config-');
const BIN = fileURLToPath(new URL('../src/bin.ts', import.meta.url));

const BASE_TOML = `data_dir = "data"

[listeners]
host = "127.0.0.1"
https_port = 9443
http_port = 9080
management_port = 9091

[limits]
max_request_body_bytes = 2048
idle_timeout = "2m"
`;

// Appended exactly as WSO2's docs write it, in camelCase.
const APPENDED = `
[policy_configurations.mcpauth_v1]
gatewayUrl = "https://gw.example.com/"

[[policy_configurations.jwtauth_v1.keyManagers]]
name = "WSO2-IS"
issuer = "https://localhost:9443/oauth2/token"
[policy_configurations.jwtauth_v1.keyManagers.jwks.remote]
uri = "https://localhost:9443/oauth2/jwks"
skipTlsVerify = true
`;

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems.map((p) => `${p.key}: ${p.message}`);
  }
  throw new Error('expected a ConfigError');
}

describe('configuration', () => {
  it('reads a TOML file with the key manager block appended, keys in any case', () => {
    const dir = tempDir();
    const file = join(dir, 'gateway.toml');
    writeFileSync(file, BASE_TOML + APPENDED);
    const config = loadConfigFile(file);
    expect(config.dataDir).toBe(join(dir, 'data'));
    expect(config.ports).toEqual({ https: 9443, http: 9080, management: 9091 });
    expect(config.limits).toEqual({
      maxRequestBodyBytes: 2048,
      maxInflightRequestBytes: 64 * 1024 * 1024,
      maxBufferedAnswerBytes: 128 * 1024 * 1024,
      idleTimeoutMs: 120_000,
      upstreamConnections: 128,
      upstreamQueueLength: 128,
      upstreamQueueTimeoutMs: 5_000,
    });
    expect(config.gatewayUrl).toBe('https://gw.example.com');
    expect(config.keyManagers).toEqual([
      {
        name: 'WSO2-IS',
        issuer: 'https://localhost:9443/oauth2/token',
        jwksUri: 'https://localhost:9443/oauth2/jwks',
        skipTlsVerify: true,
      },
    ]);
  });

  it('uses secure defaults', () => {
    const config = resolveConfig({});
    expect(config.ports).toEqual({ https: 8443, http: 8080, management: 9090 });
    expect(config.managementHost).toBe('127.0.0.1');
    expect(config.managementUsers).toEqual([]);
    expect(config.keyManagers).toEqual([]);
  });

  it('names every bad key at once', () => {
    const problems = problemsOf(() =>
      resolveConfig({
        listeners: { https_port: 70000, colour: 'red' },
        limits: {
          idle_timeout: 'soon',
          max_request_body_bytes: 2048,
          max_inflight_request_bytes: 1024,
        },
        management: { users: [{ username: 'a', password_hash: 'plain', roles: ['admin'] }] },
        policy_configurations: {
          jwtauth_v1: {
            keymanagers: [
              { name: 'a', issuer: 'x', jwks: { remote: { uri: 'ftp://x' } } },
              { name: 'a', jwks: { remote: { uri: 'https://x' } } },
            ],
          },
        },
      }),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^listeners\.https_port: /),
        'listeners.colour: unknown key',
        expect.stringMatching(/^limits\.idle_timeout: must be a duration/),
        expect.stringMatching(/^limits\.max_inflight_request_bytes: must be at least/),
        expect.stringMatching(/^management\.users\[0\]\.password_hash: /),
        expect.stringMatching(
          /^policy_configurations\.jwtauth_v1\.keymanagers\[0\]\.jwks\.remote\.uri: /,
        ),
        'policy_configurations.jwtauth_v1.keymanagers[1].issuer: is required',
        'policy_configurations.jwtauth_v1.keymanagers[1].name: duplicate name',
      ]),
    );
  });

  it('makes `gateway serve` exit 2 naming the key', () => {
    const file = join(tempDir(), 'bad.toml');
    writeFileSync(file, '[listeners]\nhttp_port = "eighty"\n');
    const result = spawnSync(
      process.execPath,
      ['--import', 'tsx', BIN, 'serve', '--config', file],
      {
        encoding: 'utf8',
        timeout: 15_000,
      },
    );
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('listeners.http_port');
  });
});
