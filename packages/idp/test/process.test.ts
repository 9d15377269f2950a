import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger } from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
import { startIdp } from '@mcp-identity/idp';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { runIdpCommand } from './helpers.js';

const BIN = fileURLToPath(new URL('../src/bin.ts', import.meta.url));
const BOOTSTRAP = fileURLToPath(new URL('./fixtures/bootstrap.yaml', import.meta.url));
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const tempDir = useTempDir('idp-process-');

const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
});

/** Runs `idp serve` as a child process and resolves with its URL once it listens. */
function serve(dataDir: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      BIN,
      'serve',
      '--http',
      '--port',
      '0',
      '--data-dir',
      dataDir,
      '--bootstrap',
      BOOTSTRAP,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOG_LEVEL: 'warn' } },
  );
  children.push(child);
  return new Promise((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const url = /"url": "([^"]+)"/.exec(output)?.[1];
      if (url && output.includes('"createdApplications"')) resolve({ url, child });
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.on('exit', (code) => reject(new Error(`idp exited with ${code}: ${output}`)));
  });
}

const killed = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });

async function backendToken(url: string): Promise<string> {
  const response = await fetch(`${url}/oauth2/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from('scim-backend:backend-secret-1').toString('base64')}`,
    },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      scope:
        'internal_user_mgt_create internal_user_mgt_list internal_group_mgt_update internal_group_mgt_view',
    }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { access_token: string }).access_token;
}

describe('idp serve as a process', () => {
  it('keeps every acknowledged write across SIGKILL and applies the bootstrap idempotently', async () => {
    const dataDir = tempDir();
    const first = await serve(dataDir);
    let token = await backendToken(first.url);
    const call = (url: string, method: string, path: string, body?: unknown, bearer = token) =>
      fetch(`${url}/scim2${path}`, {
        method,
        headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/scim+json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });

    const created = await call(first.url, 'POST', '/Users', {
      userName: 'durable',
      password: 'Durable-1',
    });
    expect(created.status).toBe(201);
    const user = (await created.json()) as { id: string };
    const groups = (await (
      await call(first.url, 'GET', '/Groups?filter=displayName%20eq%20admins')
    ).json()) as {
      Resources: { id: string }[];
    };
    const groupId = groups.Resources[0]!.id;
    const patched = await call(first.url, 'PATCH', `/Groups/${groupId}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'add', path: 'members', value: [{ value: user.id, display: 'durable' }] }],
    });
    expect(patched.status).toBe(200);
    await killed(first.child);

    // The port (so the issuer) changes with the restart: the old token is foreign now.
    const second = await serve(dataDir);
    token = await backendToken(second.url);
    const read = await call(second.url, 'GET', '/Users?filter=userName%20eq%20durable');
    expect(read.status).toBe(200);
    const found = (await read.json()) as { totalResults: number; Resources: { id: string }[] };
    expect(found.totalResults).toBe(1);
    expect(found.Resources[0]!.id).toBe(user.id);
    const group = (await (await call(second.url, 'GET', `/Groups/${groupId}`)).json()) as {
      members: { display: string }[];
    };
    expect(group.members.map((m) => m.display).sort()).toEqual(['admin', 'durable']);
    const admins = (await (
      await call(second.url, 'GET', '/Users?filter=userName%20eq%20admin')
    ).json()) as {
      totalResults: number;
    };
    expect(admins.totalResults).toBe(1);
    await killed(second.child);
  });

  it('rotates keys from the CLI while tokens signed earlier stay valid', async () => {
    const dataDir = tempDir();
    const server = await serve(dataDir);
    const before = await backendToken(server.url);
    const { code, stdout: output } = await runIdpCommand(['keys', 'rotate', '--data-dir', dataDir]);
    expect(code).toBe(0);
    const { kid } = JSON.parse(output) as { kid: string };
    const after = await backendToken(server.url);
    const kidOf = (token: string) =>
      (JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()) as { kid: string })
        .kid;
    expect(kidOf(after)).toBe(kid);
    expect(kidOf(before)).not.toBe(kid);
    for (const token of [before, after]) {
      const response = await fetch(`${server.url}/scim2/Users`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(response.status).toBe(200);
    }
    await killed(server.child);
  });
});

describe('HTTPS', () => {
  it('serves over TLS with the persisted self-signed certificate', async () => {
    const dataDir = tempDir();
    const idp = await startIdp({ dataDir, port: 0, logger: createLogger({ level: 'silent' }) });
    try {
      expect(idp.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      expect(idp.issuer).toBe(`${idp.url}/oauth2/token`);
      const ca = await readFile(join(dataDir, 'tls', 'cert.pem'), 'utf8');
      const dispatcher = new Agent({ connect: { ca } });
      const response = await undiciFetch(
        `${idp.url}/.well-known/oauth-authorization-server/oauth2/token`,
        {
          dispatcher,
        },
      );
      expect(response.status).toBe(200);
      expect(((await response.json()) as { issuer: string }).issuer).toBe(idp.issuer);
      await dispatcher.close();
    } finally {
      await idp.close();
    }
  });
});
