import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hashSecret } from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  type DualEraUpstream,
  MODERN,
  startDualEraUpstream,
} from './fixtures/dual-era-upstream.js';
import { ADMIN, ADMIN_PASSWORD, proxyDefinition } from './fixtures/gateway.js';
import { CLIENT_ID, ISSUER, type KeyManager, startKeyManager } from './fixtures/key-manager.js';
import { MCP_POST_HEADERS, toolCall } from './fixtures/mcp-client.js';
import { startUpstream, type Upstream } from './fixtures/upstream.js';

/**
 * Issue 38: a tools/call through a proxy with `mcp-auth` and `mcp-authz` runs code in at most
 * this many source files (`packages/*\/src`), so the request path stays readable end to end.
 */
const MAX_FILES = 12;

const CHILD = fileURLToPath(new URL('./fixtures/call-path-child.mjs', import.meta.url));
const tempDir = useTempDir('gw-call-path-');
let upstream: Upstream;
let dualEra: DualEraUpstream;
let keyManager: KeyManager;

beforeAll(async () => {
  [upstream, dualEra, keyManager] = await Promise.all([
    startUpstream(),
    startDualEraUpstream(),
    startKeyManager(),
  ]);
});
afterAll(async () => {
  await Promise.all([upstream?.close(), dualEra?.close(), keyManager?.stop()]);
});

/** A 2026-07-28 tools/call: the mirrored headers and the `_meta` envelope (issue 39). */
const modernCall = {
  headers: {
    'mcp-protocol-version': MODERN,
    'mcp-method': 'tools/call',
    'mcp-name': 'delete_user',
  },
  body: {
    ...toolCall('delete_user'),
    params: {
      name: 'delete_user',
      arguments: {},
      _meta: {
        'io.modelcontextprotocol/protocolVersion': MODERN,
        'io.modelcontextprotocol/clientInfo': { name: 'call-path', version: '1.0.0' },
        'io.modelcontextprotocol/clientCapabilities': {},
      },
    },
  },
};

it.each([
  ['legacy', {}, toolCall('delete_user')],
  ['modern', modernCall.headers, modernCall.body],
] as const)(
  `a warm %s tools/call runs code in at most ${MAX_FILES} source files`,
  async (era, eraHeaders, body) => {
    const dataDir = tempDir();
    const coverageDir = join(dataDir, 'coverage');
    mkdirSync(coverageDir);
    const output = join(dataDir, 'call-path.json');
    const token = await keyManager.sign({ scope: 'internal_user_mgt_delete' });
    const policies = [
      { name: 'mcp-auth', version: 'v1', params: { audiences: [CLIENT_ID] } },
      {
        name: 'mcp-authz',
        version: 'v1',
        params: {
          tools: [{ name: 'delete_user', scopes: { allOf: ['internal_user_mgt_delete'] } }],
        },
      },
    ];
    const upstreamUrl = era === 'modern' ? dualEra.mcpUrl : upstream.mcpUrl;
    const definition = proxyDefinition('call-path-v1.0', '/call-path', upstreamUrl, policies);
    // Every version the gateway supports (no `specVersions`): both eras.
    delete (definition.spec as Record<string, unknown>).specVersions;
    const input = {
      settings: {
        data_dir: dataDir,
        log_level: 'info',
        listeners: { host: '127.0.0.1', https_port: 0, http_port: 0, management_port: 0 },
        management: {
          users: [
            {
              username: 'admin',
              password_hash: await hashSecret(ADMIN_PASSWORD),
              roles: ['admin'],
            },
          ],
        },
        policy_configurations: {
          jwtauth_v1: {
            keyManagers: [
              {
                name: 'idp',
                issuer: ISSUER,
                jwks: { remote: { uri: keyManager.jwksUri, certificatePath: keyManager.certPath } },
              },
            ],
          },
        },
      },
      admin: ADMIN,
      definition,
      path: '/call-path/mcp',
      headers: { ...MCP_POST_HEADERS, ...eraHeaders, authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
      warmCalls: 20,
    };
    const child = spawn(process.execPath, [CHILD], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: {
        ...process.env,
        NODE_V8_COVERAGE: coverageDir,
        CALL_PATH_INPUT: JSON.stringify(input),
        CALL_PATH_OUTPUT: output,
        CALL_PATH_LOG: join(dataDir, 'gateway.log'),
      },
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const [code] = await once(child, 'exit');
    expect(code, stderr).toBe(0);
    const result = JSON.parse(readFileSync(output, 'utf8')) as {
      warm: number[];
      status: number;
      /** Each file touched, with the functions of it that ran. */
      files: Record<string, string[]>;
    };
    expect(result.warm).toEqual(Array(input.warmCalls).fill(200));
    expect(result.status).toBe(200);
    const files = Object.keys(result.files).sort();
    const listing = files.map((file) => `${file}: ${result.files[file]?.join(', ')}`).join('\n');
    expect(files.length, `${files.length} files:\n${listing}`).toBeLessThanOrEqual(MAX_FILES);
  },
  60_000,
);
