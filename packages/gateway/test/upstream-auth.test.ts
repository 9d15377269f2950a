import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
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
  let secretsDir: string;
  let secretFile: string;
  let logs = '';

  beforeAll(async () => {
    process.env.GW_TEST_UPSTREAM_SECRET = ENV_SECRET;
    secretsDir = tempDir();
    secretFile = join(secretsDir, 'upstream-secret');
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
      secrets: { env_prefixes: ['GW_TEST_'], directory: secretsDir },
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
        { header: 'X-A', secretRef: `file:${join(secretsDir, 'none')}` },
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

describe('upstream.auth secretRef allow-list', () => {
  const DATABASE_URL = 'postgres://gateway:db-password-9c1e@db.internal:5432/gateway';
  let upstream: Upstream;
  let fx: GatewayFixture;
  let secretsDir: string;
  let outside: string;

  /** Deploys a proxy whose upstream.auth reads `secretRef`; the answer's status and message. */
  async function deployWith(
    gateway: GatewayFixture,
    name: string,
    secretRef: string,
  ): Promise<{ status: number; message: string }> {
    const response = await gateway.deploy(
      withAuth(`${name}-v1.0`, `/${name}`, upstream.mcpUrl, secretRef),
    );
    const body = await json(response);
    return { status: response.status, message: String(body.message ?? '') };
  }

  beforeAll(async () => {
    // What an administrator would like to send upstream: the gateway's own database password,
    // a system file, a file next to the secrets directory.
    process.env.GATEWAY_DATABASE_URL = DATABASE_URL;
    process.env.GATEWAY_SECRET_UPSTREAM = ENV_SECRET;
    process.env.GW_TEST_ALLOWED = ENV_SECRET;
    const root = tempDir();
    secretsDir = join(root, 'secrets');
    outside = join(root, 'outside-secret');
    mkdirSync(secretsDir);
    writeFileSync(join(secretsDir, 'allowed'), `${FILE_SECRET}\n`, { mode: 0o600 });
    writeFileSync(outside, 'not-for-upstreams\n', { mode: 0o600 });
    symlinkSync(outside, join(secretsDir, 'link-out'));
    symlinkSync('/etc/passwd', join(secretsDir, 'passwd'));
    upstream = await startUpstream();
    fx = await startTestGateway({
      dataDir: tempDir(),
      secrets: { env_prefixes: ['GW_TEST_ALLOWED'], directory: secretsDir },
    });
  });
  afterAll(async () => {
    delete process.env.GATEWAY_DATABASE_URL;
    delete process.env.GATEWAY_SECRET_UPSTREAM;
    delete process.env.GW_TEST_ALLOWED;
    await fx?.gateway.close();
    await upstream?.close();
  });

  it('refuses environment variables outside the allowed prefixes, naming them', async () => {
    const refused = await deployWith(fx, 'dburl', 'env:GATEWAY_DATABASE_URL');
    expect(refused.status).toBe(400);
    expect(refused.message).toContain(
      'env:GATEWAY_DATABASE_URL is not allowed: the gateway reads only variables starting with GW_TEST_ALLOWED (secrets.env_prefixes)',
    );
    expect(refused.message).not.toContain('db-password');
    expect((await fx.management('/api/management/v1/mcp-proxies/dburl-v1.0')).status).toBe(404);
    expect((await deployWith(fx, 'allowed-env', 'env:GW_TEST_ALLOWED')).status).toBe(201);
    await postMcp(`${fx.gateway.plainUrl}/allowed-env/mcp`, PING);
    expect(upstream.lastHeaders?.['x-gateway-auth']).toBe(ENV_SECRET);
  });

  it('refuses files outside the secrets directory, by path, by .. and by symlink', async () => {
    const cases: Array<[string, string, string]> = [
      ['passwd', 'file:/etc/passwd', 'the gateway reads files only below'],
      ['dotdot', `file:${secretsDir}/../outside-secret`, 'the gateway reads files only below'],
      ['link-out', `file:${join(secretsDir, 'link-out')}`, 'it leads outside'],
      ['link-passwd', `file:${join(secretsDir, 'passwd')}`, 'it leads outside'],
      ['the-dir', `file:${secretsDir}`, 'the gateway reads files only below'],
    ];
    for (const [name, ref, reason] of cases) {
      const refused = await deployWith(fx, name, ref);
      expect(refused.status, name).toBe(400);
      expect(refused.message, name).toContain(`${reason} ${secretsDir} (secrets.directory)`);
    }
    const allowed = await deployWith(fx, 'allowed-file', `file:${join(secretsDir, 'allowed')}`);
    expect(allowed.status).toBe(201);
    await postMcp(`${fx.gateway.plainUrl}/allowed-file/mcp`, PING);
    expect(upstream.lastHeaders?.['x-gateway-auth']).toBe(FILE_SECRET);
  });

  it('reads only GATEWAY_SECRET_ variables and no file by default', async () => {
    const strict = await startTestGateway({ dataDir: tempDir(), secrets: {} });
    try {
      const file = await deployWith(strict, 'file', `file:${join(secretsDir, 'allowed')}`);
      expect(file.status).toBe(400);
      expect(file.message).toContain(
        'file: is not allowed: no secrets directory is configured (secrets.directory or GATEWAY_SECRETS_DIR)',
      );
      expect((await deployWith(strict, 'dburl', 'env:GATEWAY_DATABASE_URL')).status).toBe(400);
      expect((await deployWith(strict, 'env', 'env:GATEWAY_SECRET_UPSTREAM')).status).toBe(201);
    } finally {
      await strict.gateway.close();
    }
  });

  it('stops routing a stored proxy whose secretRef a stricter configuration no longer allows', async () => {
    const dataDir = tempDir();
    const permissive = await startTestGateway({
      dataDir,
      secrets: { env_prefixes: ['GW_TEST_ALLOWED'] },
    });
    expect((await deployWith(permissive, 'kept', 'env:GW_TEST_ALLOWED')).status).toBe(201);
    expect((await postMcp(`${permissive.gateway.plainUrl}/kept/mcp`, PING)).status).toBe(200);
    await permissive.gateway.close();
    const strict = await startTestGateway({ dataDir, secrets: {} });
    try {
      // Not routed rather than forwarded without its credential (or with a secret it may not read).
      expect((await postMcp(`${strict.gateway.plainUrl}/kept/mcp`, PING)).status).toBe(404);
    } finally {
      await strict.gateway.close();
    }
  });
});
