import { useTempDir } from '@mcp-identity/common/testing';
import { openIdpData, runIdpCli } from '@mcp-identity/idp';
import { afterEach, describe, expect, it, vi } from 'vitest';

const tempDir = useTempDir('idp-cli-');

/** Runs the CLI in-process and returns its exit code and what it printed on stdout. */
async function run(args: string[]): Promise<{ code: number; output: string }> {
  let output = '';
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    output += String(chunk);
    return true;
  });
  try {
    return { code: await runIdpCli(args), output };
  } finally {
    spy.mockRestore();
  }
}

describe('idp apps and keys commands', () => {
  afterEach(() => vi.restoreAllMocks());

  it('issues client ids a command line never reads as an option (letters and digits only)', async () => {
    const data = openIdpData(tempDir());
    try {
      for (let i = 0; i < 40; i += 1) {
        const { app } = await data.apps.create({ name: `app-${i}`, public: true });
        expect(app.clientId).toMatch(/^[A-Za-z0-9]{24}$/);
      }
    } finally {
      data.close();
    }
  });

  it('creates, lists, rotates the secret of and deletes an application', async () => {
    const dataDir = tempDir();
    const created = await run([
      'apps',
      'create',
      '--name',
      'backend',
      '--scopes',
      'internal_user_mgt_list,internal_user_mgt_view',
      '--data-dir',
      dataDir,
    ]);
    expect(created.code).toBe(0);
    const app = JSON.parse(created.output) as {
      clientId: string;
      clientSecret: string;
      scopes: string[];
    };
    expect(app.scopes).toEqual(['internal_user_mgt_list', 'internal_user_mgt_view']);
    expect(app.clientSecret.length).toBeGreaterThanOrEqual(32);

    const listed = await run(['apps', 'list', '--data-dir', dataDir]);
    expect(listed.output).toContain(app.clientId);
    expect(listed.output).not.toContain(app.clientSecret);

    const rotated = await run(['apps', 'rotate-secret', app.clientId, '--data-dir', dataDir]);
    const { clientSecret } = JSON.parse(rotated.output) as { clientSecret: string };
    const data = openIdpData(dataDir);
    try {
      expect(await data.apps.authenticate(app.clientId, app.clientSecret)).toBeUndefined();
      expect((await data.apps.authenticate(app.clientId, clientSecret))?.clientId).toBe(
        app.clientId,
      );
    } finally {
      data.close();
    }

    expect((await run(['apps', 'delete', app.clientId, '--data-dir', dataDir])).code).toBe(0);
    expect((await run(['apps', 'list', '--data-dir', dataDir])).output).not.toContain(app.clientId);
  });

  it('creates an application that may exchange tokens and changes what it may exchange', async () => {
    const dataDir = tempDir();
    const grant = 'urn:ietf:params:oauth:grant-type:token-exchange';
    const created = await run([
      'apps',
      'create',
      '--name',
      'gateway',
      '--grant-types',
      grant,
      '--subject-audiences',
      'https://gateway.test/mcp',
      '--exchange-resources',
      'https://scim.test/mcp',
      '--data-dir',
      dataDir,
    ]);
    expect(created.code).toBe(0);
    const app = JSON.parse(created.output) as { clientId: string; tokenExchange: unknown };
    expect(app.tokenExchange).toEqual({
      subjectAudiences: ['https://gateway.test/mcp'],
      resources: ['https://scim.test/mcp'],
    });

    const backend = JSON.parse(
      (await run(['apps', 'create', '--name', 'backend', '--data-dir', dataDir])).output,
    ) as { clientId: string };
    const changed = await run([
      'apps',
      'token-exchange',
      backend.clientId,
      '--subject-audiences',
      'https://scim.test/mcp',
      '--exchange-resources',
      'https://idp.test/scim2',
      '--data-dir',
      dataDir,
    ]);
    expect(changed.code).toBe(0);
    expect(JSON.parse(changed.output)).toMatchObject({
      grantTypes: ['client_credentials', grant],
      tokenExchange: {
        subjectAudiences: ['https://scim.test/mcp'],
        resources: ['https://idp.test/scim2'],
      },
    });
    const listed = await run(['apps', 'list', '--data-dir', dataDir]);
    expect(listed.output).toContain('https://idp.test/scim2');
  });

  it('rotates the signing key of an existing IdP', async () => {
    const dataDir = tempDir();
    openIdpData(dataDir).close();
    const first = JSON.parse((await run(['keys', 'rotate', '--data-dir', dataDir])).output) as {
      kid: string;
    };
    const second = JSON.parse((await run(['keys', 'rotate', '--data-dir', dataDir])).output) as {
      kid: string;
    };
    expect(second.kid).not.toBe(first.kid);
    const data = openIdpData(dataDir);
    try {
      expect(data.keys.publishedKeys().map((k) => k.kid)).toEqual([second.kid, first.kid]);
    } finally {
      data.close();
    }
  });

  it('answers an unknown command with usage and exit code 2', async () => {
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    expect((await run(['frobnicate'])).code).toBe(2);
    expect(String(stderr.mock.calls[0]?.[0])).toContain('Usage: mcp-identity-idp <command>');
  });
});
