import { runCli } from '@mcp-identity/arazzo-mcp';
import { useTempDir } from '@mcp-identity/common/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  FIXTURE_ENV,
  type FixtureApi,
  startFixtureApi,
  writeFixtures,
} from './support/fixture-api.js';

const tempDir = useTempDir('arazzo-mcp-cli-');
let api: FixtureApi;
let files: ReturnType<typeof writeFixtures>;

beforeAll(async () => {
  api = await startFixtureApi();
  files = writeFixtures(tempDir(), api.url);
});

async function run(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, {
    out: (text) => out.push(text),
    err: (text) => err.push(text),
    env: FIXTURE_ENV,
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('arazzo-mcp validate', () => {
  it('prints one OK line for a valid file', async () => {
    const result = await run(['validate', '--arazzo', files.users]);
    expect(result).toMatchObject({ code: 0, err: '' });
    expect(result.out).toMatch(
      /^OK: .*users\.arazzo\.yaml: 4 tools \(search_users, get_user_by_id, create_user, delete_user\)$/,
    );
  });

  it('lists every problem of a broken file and exits 1', async () => {
    const result = await run(['validate', '--arazzo', files.broken]);
    expect(result.code).toBe(1);
    expect(result.out).toBe('');
    const lines = result.err.split('\n');
    expect(lines[0]).toMatch(/^Invalid Arazzo\/OpenAPI description \(\d+ problems\):$/);
    expect(lines.length).toBeGreaterThanOrEqual(4);
    expect(result.err).toContain('broken.arazzo.yaml#');
    expect(result.err).toContain('noSuchOperation');
    expect(result.err).toContain('missingStep');
  });

  it('lists tool name collisions and exits 1', async () => {
    const result = await run(['validate', '--arazzo', files.collision]);
    expect(result.code).toBe(1);
    expect(result.err).toContain(
      "workflows 'listUsers' and 'list_users' both become tool 'list_users'",
    );
  });
});

describe('arazzo-mcp tools', () => {
  it('prints the tools/list entries and the credential env vars as JSON', async () => {
    const result = await run(['tools', '--arazzo', files.users, '--param-descriptions']);
    expect(result.code).toBe(0);
    const { tools, credentials } = JSON.parse(result.out) as {
      tools: { name: string; inputSchema: unknown }[];
      credentials: { source: string; scheme: string; env: string[] }[];
    };
    expect(credentials).toEqual([
      expect.objectContaining({
        source: 'scim',
        scheme: 'OAuth2',
        env: expect.arrayContaining(['SCIM_OAUTH2_CLIENT_ID', 'SCIM_OAUTH2_CLIENT_SECRET']),
      }),
    ]);
    expect(tools[0]).toMatchObject({
      name: 'search_users',
      inputSchema: {
        type: 'object',
        properties: {
          count: { type: 'integer', description: 'Maximum number of users' },
          filter: { type: 'string', description: 'SCIM filter, e.g. userName eq "alice"' },
        },
        required: ['count', 'filter'],
      },
    });
  });
});

describe('arazzo-mcp serve', () => {
  it('fails start-up with exit 1 when two workflows become the same tool', async () => {
    const result = await run(['serve', '--arazzo', files.collision, '--port', '0']);
    expect(result.code).toBe(1);
    expect(result.err).toContain("both become tool 'list_users'");
  });
});
