import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createLogger } from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayFixture, proxyDefinition, startTestGateway } from './fixtures/gateway.js';
import { json, postMcp } from './fixtures/mcp-client.js';
import { startUpstream, type Upstream } from './fixtures/upstream.js';

const tempDir = useTempDir('gw-upstream-auth-');
const ENV_SECRET = 'env-secret-4f1c9a';
const FILE_SECRET = 'file-secret-77d2e0';
const PING = { jsonrpc: '2.0', id: 1, method: 'ping' };

function withAuth(name: string, context: string, url: string, secretRef: string) {
  const definition = proxyDefinition(name, context, url);
  const spec = definition.spec as { upstream: Record<string, unknown> };
  spec.upstream.auth = { header: 'X-Gateway-Auth', secretRef };
  return definition;
}

describe('upstream.auth', () => {
  let upstream: Upstream;
  let fx: GatewayFixture;
  let secretFile: string;
  let logs = '';

  beforeAll(async () => {
    process.env.GW_TEST_UPSTREAM_SECRET = ENV_SECRET;
    secretFile = join(tempDir(), 'upstream-secret');
    writeFileSync(secretFile, `${FILE_SECRET}\nignored second line\n`, { mode: 0o600 });
    upstream = await startUpstream();
    const destination = new Writable({
      write(chunk, _encoding, callback) {
        logs += String(chunk);
        callback();
      },
    });
    fx = await startTestGateway({
      dataDir: tempDir(),
      logger: createLogger({ level: 'debug', pretty: false, destination }),
    });
  });
  afterAll(async () => {
    delete process.env.GW_TEST_UPSTREAM_SECRET;
    await fx?.gateway.close();
    await upstream?.close();
  });

  it('adds the secret from env: and file: to every upstream request, never the client’s value', async () => {
    const env = withAuth('env-v1.0', '/env', upstream.mcpUrl, 'env:GW_TEST_UPSTREAM_SECRET');
    const file = withAuth('file-v1.0', '/file', upstream.mcpUrl, `file:${secretFile}`);
    expect((await fx.deploy(env)).status).toBe(201);
    expect((await fx.deploy(file)).status).toBe(201);
    await postMcp(`${fx.gateway.plainUrl}/env/mcp`, PING, { 'x-gateway-auth': 'forged' });
    expect(upstream.lastHeaders?.['x-gateway-auth']).toBe(ENV_SECRET);
    await postMcp(`${fx.gateway.plainUrl}/file/mcp`, PING);
    expect(upstream.lastHeaders?.['x-gateway-auth']).toBe(FILE_SECRET);
  });

  it('never returns or logs the secret: the management API shows the secretRef only', async () => {
    const one = await json(await fx.management('/api/management/v1/mcp-proxies/env-v1.0'));
    expect(one.spec.upstream.auth).toEqual({
      header: 'X-Gateway-Auth',
      secretRef: 'env:GW_TEST_UPSTREAM_SECRET',
    });
    const all = JSON.stringify(await json(await fx.management('/api/management/v1/mcp-proxies')));
    expect(all).not.toContain(ENV_SECRET);
    expect(all).not.toContain(FILE_SECRET);
    expect(logs).not.toContain(ENV_SECRET);
    expect(logs).not.toContain(FILE_SECRET);
  });

  it('refuses a deployment whose secret cannot be read, or whose header or reference is unusable', async () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['missing-env', { header: 'X-Gateway-Auth', secretRef: 'env:GW_TEST_NOT_SET' }, 'secretRef'],
      [
        'missing-file',
        { header: 'X-A', secretRef: `file:${join(tempDir(), 'none')}` },
        'secretRef',
      ],
      ['relative', { header: 'X-A', secretRef: 'file:secret.txt' }, 'secretRef'],
      ['scheme', { header: 'X-A', secretRef: 'vault:x' }, 'secretRef'],
      ['host', { header: 'Host', secretRef: 'env:GW_TEST_UPSTREAM_SECRET' }, 'header'],
      ['bad-name', { header: 'X A', secretRef: 'env:GW_TEST_UPSTREAM_SECRET' }, 'header'],
    ];
    for (const [name, auth, field] of cases) {
      const definition = proxyDefinition(`${name}-v1.0`, `/${name}`, upstream.mcpUrl);
      (definition.spec as { upstream: Record<string, unknown> }).upstream.auth = auth;
      const response = await fx.deploy(definition);
      expect(response.status, name).toBe(400);
      const body = await json(response);
      expect(body.errors.map((e: { field: string }) => e.field)).toContain(
        `spec.upstream.auth.${field}`,
      );
    }
  });
});
