import { HELP, parseCommandLine, tlsVerifyFromEnv } from '@mcp-identity/arazzo-mcp';
import { ConfigError } from '@mcp-identity/common';
import { describe, expect, it } from 'vitest';

describe('command line', () => {
  it('applies the documented defaults to serve', () => {
    expect(parseCommandLine(['serve', '--arazzo', 'w.arazzo.yaml'], {})).toEqual({
      name: 'serve',
      options: expect.objectContaining({
        arazzo: 'w.arazzo.yaml',
        transport: 'http',
        host: '127.0.0.1',
        port: 5000,
        sourceServers: {},
        resultFormat: 'python',
        httpErrorsAsToolErrors: false,
        tokenCache: false,
        honorRequired: false,
        paramDescriptions: false,
        requestTimeoutMs: 30_000,
        maxResponseBytes: 10 * 1024 * 1024,
      }),
    });
  });

  it('reads flags over environment variables', () => {
    const command = parseCommandLine(
      [
        'serve',
        '--arazzo=a.yaml',
        '--transport',
        'stdio',
        '--port',
        '0',
        '--source-server',
        'scim=https://127.0.0.1:9443/scim2',
        '--source-server',
        'ai=http://localhost:8000',
        '--token-cache',
        '--result-format',
        'json',
      ],
      { ARAZZO_MCP_PORT: '7000', ARAZZO_MCP_HONOR_REQUIRED: 'true' },
    );
    expect(command).toEqual({
      name: 'serve',
      options: expect.objectContaining({
        transport: 'stdio',
        port: 0,
        sourceServers: { scim: 'https://127.0.0.1:9443/scim2', ai: 'http://localhost:8000' },
        tokenCache: true,
        honorRequired: true,
        resultFormat: 'json',
      }),
    });
  });

  it('reads the builtin auth options, with the data directory defaulting to .data/area-a', () => {
    expect(parseCommandLine(['serve', '--arazzo', 'a.yaml'], {})).toMatchObject({
      options: { auth: 'none', dataDir: '.data/area-a', trustProxy: false },
    });
    const command = parseCommandLine(
      ['serve', '--arazzo', 'a.yaml', '--auth', 'builtin', '--public-url', 'https://mcp.example'],
      {
        ARAZZO_MCP_DATA_DIR: '/var/lib/area-a',
        ARAZZO_MCP_TRUST_PROXY: 'yes',
        ARAZZO_MCP_ADMIN_EMAIL: 'ops@example.com',
      },
    );
    expect(command).toMatchObject({
      options: {
        auth: 'builtin',
        publicUrl: 'https://mcp.example',
        dataDir: '/var/lib/area-a',
        trustProxy: true,
        adminEmail: 'ops@example.com',
      },
    });
    expect(
      parseCommandLine(['accounts', 'add', '--email', 'a@b.c', '--password-stdin'], {}),
    ).toEqual({
      name: 'accounts',
      action: 'add',
      options: { dataDir: '.data/area-a', email: 'a@b.c', passwordStdin: true },
    });
  });

  it.each([
    [['serve'], /arazzo.*required/],
    [['serve', '--arazzo', 'a.yaml', '--bogus'], /Unknown option '--bogus'/],
    [
      ['serve', '--arazzo', 'a.yaml', '--transport', 'sse'],
      /"sse": expected a string one of "http", "stdio"/,
    ],
    [['serve', '--arazzo', 'a.yaml', '--port', '70000'], /expected an integer from 0 to 65535/],
    [
      ['serve', '--arazzo', 'a.yaml', '--auth', 'oidc'],
      /"oidc": expected a string one of "none", "builtin"/,
    ],
    [
      ['serve', '--arazzo', 'a.yaml', '--auth', 'builtin', '--transport', 'stdio'],
      /builtin needs --transport http/,
    ],
    [
      ['serve', '--arazzo', 'a.yaml', '--auth', 'builtin', '--public-url', 'ftp://x'],
      /"ftp:\/\/x": expected an http\(s\) URL/,
    ],
    [['accounts'], /unknown accounts action ''/],
    [['accounts', 'list', '--email', 'a@b.c'], /Unknown option '--email'/],
    [
      ['validate', '--arazzo', 'a.yaml', '--source-server', 'scim'],
      /expected <name>=<http\(s\) URL>/,
    ],
    [['validate', '--arazzo', 'a.yaml', '--port', '1'], /Unknown option '--port'/],
    [['launch'], /unknown command 'launch'/],
  ])('refuses %j with a clear message (exit 2)', (argv, message) => {
    let caught: unknown;
    try {
      parseCommandLine(argv, {});
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).exitCode).toBe(2);
    expect((caught as ConfigError).message).toMatch(message);
  });

  it('documents every option and environment variable in --help', () => {
    expect(parseCommandLine(['--help'], {})).toEqual({ name: 'help' });
    expect(parseCommandLine(['serve', '--help'], {})).toEqual({ name: 'help' });
    for (const text of [
      '--arazzo',
      '--transport',
      '--host',
      '--port',
      '--source-server',
      '--auth',
      '--data-dir',
      '--public-url',
      '--trust-proxy',
      '--admin-email',
      'ARAZZO_MCP_DATA_DIR',
      'accounts add',
      '--password-stdin',
      '--result-format',
      '--http-errors-as-tool-errors',
      '--token-cache',
      '--honor-required',
      '--param-descriptions',
      '--request-timeout-ms',
      '--max-response-bytes',
      'SCIM_OAUTH2_CLIENT_ID',
      'SCIM_OAUTH2_CLIENT_SECRET',
      'AI_OAUTH2_CLIENT_ID',
      '_ACCESS_TOKEN',
      'ARAZZO_DISABLE_TLS_VERIFY',
      'ARAZZO_MCP_PORT',
      'LOG_LEVEL',
    ]) {
      expect(HELP).toContain(text);
    }
  });
});

describe('ARAZZO_DISABLE_TLS_VERIFY', () => {
  it.each([
    [undefined, true],
    ['1', false],
    [' 1\n', false],
    ['true', true],
    ['0', true],
    ['11', true],
  ])('%j keeps TLS verification: %s', (value, verify) => {
    expect(tlsVerifyFromEnv({ ARAZZO_DISABLE_TLS_VERIFY: value })).toBe(verify);
  });
});
