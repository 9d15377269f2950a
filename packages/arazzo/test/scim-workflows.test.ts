import { createRunner, type LoadedArazzo, loadArazzo, type Runner } from '@mcp-identity/arazzo';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FixtureApi, materialize, startFixtureApi } from './fixtures/api.js';

const CREDENTIALS = {
  SCIM_OAUTH2_CLIENT_ID: 'scim-id',
  SCIM_OAUTH2_CLIENT_SECRET: 'scim-secret',
  AI_OAUTH2_CLIENT_ID: 'ai-id',
  AI_OAUTH2_CLIENT_SECRET: 'ai-secret',
};

let api: FixtureApi;
let docs: ReturnType<typeof materialize>;
let loaded: LoadedArazzo;
const runners: Runner[] = [];

function runner(options: Parameters<typeof createRunner>[1] = {}): Runner {
  const created = createRunner(loaded, { env: CREDENTIALS, ...options });
  runners.push(created);
  return created;
}

beforeAll(async () => {
  api = await startFixtureApi();
  docs = materialize(['scim.arazzo.yaml', 'scim.openapi.yaml', 'ai.openapi.yaml'], api.url);
  loaded = await loadArazzo(docs.path('scim.arazzo.yaml'));
});

afterAll(async () => {
  await Promise.all(runners.map((r) => r.close()));
  await api.close();
  docs.remove();
});

function reset() {
  api.requests.length = 0;
  api.tokenRequests.length = 0;
}

describe('loading', () => {
  it('lists the workflows in document order with inputs and output names', () => {
    expect(loaded.workflows.map((w) => w.workflowId)).toEqual([
      'listUsers',
      'getUser',
      'threeReads',
      'lookupThenSummarize',
      'addUserToGroup',
    ]);
    const list = loaded.workflows[0]!;
    expect(list.summary).toMatch(/^List users/);
    expect(list.inputs).toEqual({
      type: 'object',
      properties: { filter: { type: 'string' }, count: { type: 'integer' } },
    });
    expect(list.outputs).toEqual(['users', 'total', 'rateLimit', 'error', 'errorStatus']);
    expect(loaded.workflows[1]!.description).toBe('Get one user by id.');
  });

  it('names the environment variables of each API after its title and scheme', () => {
    expect(loaded.credentials).toEqual([
      {
        source: 'scim',
        scheme: 'OAuth2',
        type: 'oauth2',
        env: ['SCIM_OAUTH2_CLIENT_ID', 'SCIM_OAUTH2_CLIENT_SECRET', 'SCIM_OAUTH2_ACCESS_TOKEN'],
      },
      {
        source: 'ai',
        scheme: 'OAuth2',
        type: 'oauth2',
        env: ['AI_OAUTH2_CLIENT_ID', 'AI_OAUTH2_CLIENT_SECRET', 'AI_OAUTH2_ACCESS_TOKEN'],
      },
    ]);
  });
});

describe('a successful workflow', () => {
  it('fetches a client-credentials token with the requirement scopes and calls the API with it', async () => {
    reset();
    const result = await runner().run('listUsers', { filter: 'userName eq "alice"', count: 5 });
    expect(result).toEqual({
      kind: 'completed',
      outputs: {
        users: [expect.objectContaining({ id: 'u1', userName: 'alice' })],
        total: 1,
        rateLimit: '99',
        error: null,
        errorStatus: null,
      },
    });
    expect(api.tokenRequests).toEqual([
      {
        clientId: 'scim-id',
        clientSecret: 'scim-secret',
        scope: 'scim.read',
        grantType: 'client_credentials',
      },
    ]);
    const call = api.requests.find((r) => r.url.startsWith('/scim2/Users'))!;
    expect(call.url).toBe('/scim2/Users?filter=userName+eq+%22alice%22&count=5');
    expect(call.headers.authorization).toBe('Bearer tok-1');
  });

  it('runs a three-step workflow on one token, and fetches a new one for the next run', async () => {
    reset();
    const run = runner();
    const first = await run.run('threeReads', { userName: 'alice' });
    expect(first).toEqual({
      kind: 'completed',
      outputs: { id: 'u1', userName: 'alice', givenName: "O'Neil" },
    });
    expect(api.tokenRequests).toHaveLength(1);
    expect(api.requests.filter((r) => r.url.startsWith('/scim2/Users'))).toHaveLength(3);
    await run.run('threeReads', { userName: 'alice' });
    expect(api.tokenRequests).toHaveLength(2);
  });

  it('keeps one token across runs with tokenCache until 30 s before it expires', async () => {
    reset();
    let now = 1_000_000;
    const run = runner({ tokenCache: true, now: () => now });
    await run.run('threeReads', { userName: 'alice' });
    await run.run('threeReads', { userName: 'bob' });
    expect(api.tokenRequests).toHaveLength(1);
    now += 3_600_000 - 31_000; // 31 s before expiry: still used
    await run.run('threeReads', { userName: 'alice' });
    expect(api.tokenRequests).toHaveLength(1);
    now += 2_000; // 29 s before expiry: renewed
    await run.run('threeReads', { userName: 'alice' });
    expect(api.tokenRequests).toHaveLength(2);
  });

  it('shares one token request between concurrent runs with tokenCache, not without', async () => {
    reset();
    const cached = runner({ tokenCache: true });
    await Promise.all([
      cached.run('threeReads', { userName: 'alice' }),
      cached.run('threeReads', { userName: 'bob' }),
    ]);
    expect(api.tokenRequests).toHaveLength(1);
    reset();
    const plain = runner();
    await Promise.all([
      plain.run('threeReads', { userName: 'alice' }),
      plain.run('threeReads', { userName: 'bob' }),
    ]);
    expect(api.tokenRequests).toHaveLength(2);
  });

  it('calls two APIs with their own credentials and scopes, and sends object inputs as objects', async () => {
    reset();
    const result = await runner().run('lookupThenSummarize', {
      userName: 'alice',
      options: { maxLen: 10 },
    });
    expect(result).toEqual({
      kind: 'completed',
      outputs: { summary: 'summary of alice', sent: { text: 'alice', options: { maxLen: 10 } } },
    });
    expect(api.tokenRequests.map((t) => [t.clientId, t.scope])).toEqual([
      ['scim-id', 'scim.read'],
      ['ai-id', 'ai.invoke'],
    ]);
    const summarize = api.requests.find((r) => r.url === '/ai/summaries')!;
    expect(summarize.body).toEqual({ text: 'alice', options: { maxLen: 10 } });
    expect(summarize.headers['content-type']).toBe('application/json');
  });

  it('fills a JSON template payload and applies replacements at JSON pointers', async () => {
    reset();
    const result = await runner().run('addUserToGroup', { userId: 'u1', groupId: 'g 1/2' });
    expect(result.kind).toBe('completed');
    const patch = api.requests.find((r) => r.method === 'PATCH')!;
    expect(patch.url).toBe('/scim2/Groups/g%201%2F2');
    expect(patch.headers['content-type']).toBe('application/scim+json');
    expect(patch.body).toEqual({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'add', path: 'members', value: [{ value: 'u1', display: 'alice' }] }],
    });
    expect(api.tokenRequests.map((t) => t.scope)).toEqual(['scim.read', 'scim.write']);
    // Workflow outputs that read $response see the last step that ran: the PATCH.
    expect(result).toMatchObject({ outputs: { lastDetail: null, lastStatus: 200 } });
  });
});

describe('a document prepared once, run many times', () => {
  it('fills payloads, parameters and replacements afresh on every run', async () => {
    reset();
    const run = runner();
    await run.run('addUserToGroup', { userId: 'u1', groupId: 'g1' });
    await run.run('addUserToGroup', { userId: 'u2', groupId: 'g2' });
    const patches = api.requests.filter((r) => r.method === 'PATCH');
    expect(patches.map((patch) => [patch.url, patch.body])).toEqual(
      [
        ['u1', 'alice', 'g1'],
        ['u2', 'bob', 'g2'],
      ].map(([userId, userName, groupId]) => [
        `/scim2/Groups/${groupId}`,
        {
          schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
          Operations: [
            { op: 'add', path: 'members', value: [{ value: userId, display: userName }] },
          ],
        },
      ]),
    );
  });

  it('reads the credentials on every run, so a changed secret is the one sent', async () => {
    reset();
    const env: Record<string, string> = { ...CREDENTIALS };
    const run = runner({ env });
    await run.run('getUser', { userId: 'u1' });
    env.SCIM_OAUTH2_CLIENT_SECRET = 'rotated';
    const refused = await run.run('getUser', { userId: 'u1' });
    expect(api.tokenRequests.map((t) => t.clientSecret)).toEqual(['scim-secret', 'rotated']);
    expect(refused).toMatchObject({ kind: 'error' });
  });
});

describe('an API that refuses', () => {
  it('stops at the failing step and still maps error and errorStatus from its response', async () => {
    const result = await runner().run('listUsers', { filter: 'nonsense', count: 1 });
    expect(result).toEqual({
      kind: 'completed',
      outputs: {
        users: null,
        total: null,
        rateLimit: null,
        error: 'Invalid filter',
        errorStatus: '400',
      },
      failedStep: { stepId: 'list', statusCode: 400 },
    });
  });

  it('returns the 404 body of a default-criteria step as its output, and skips later steps', async () => {
    reset();
    const get = await runner().run('getUser', { userId: 'nope' });
    expect(get).toEqual({
      kind: 'completed',
      outputs: {
        user: {
          schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
          detail: 'User not found',
          status: '404',
        },
      },
      failedStep: { stepId: 'get', statusCode: 404 },
    });
    const add = await runner().run('addUserToGroup', { userId: 'nope', groupId: 'g1' });
    expect(add).toMatchObject({
      outputs: {
        received: null,
        error: 'User not found',
        errorStatus: '404',
        lastDetail: 'User not found',
        lastStatus: 404,
      },
      failedStep: { stepId: 'lookupUser' },
    });
    expect(api.requests.some((r) => r.method === 'PATCH')).toBe(false);
  });
});

describe('credentials', () => {
  it('ends the run with an error naming the scheme and the IdP answer when the token request fails', async () => {
    reset();
    const result = await runner({
      env: { ...CREDENTIALS, SCIM_OAUTH2_CLIENT_SECRET: 'wrong' },
    }).run('listUsers', {
      filter: 'userName eq "alice"',
      count: 1,
    });
    expect(result.kind).toBe('error');
    if (result.kind !== 'error') return;
    expect(result.stepId).toBe('list');
    expect(result.message).toContain('security scheme "OAuth2" of source "scim"');
    expect(result.message).toContain('HTTP 401 invalid_client: Client authentication failed');
    expect(result.message).not.toContain('wrong');
    expect(api.requests.some((r) => r.url.startsWith('/scim2/Users'))).toBe(false);
  });

  it('uses <PREFIX>_<SCHEME>_ACCESS_TOKEN when no client credentials are set', async () => {
    reset();
    await runner({ env: { SCIM_OAUTH2_ACCESS_TOKEN: 'static-token' } }).run('getUser', {
      userId: 'u1',
    });
    expect(api.tokenRequests).toHaveLength(0);
    expect(api.requests.at(-1)!.headers.authorization).toBe('Bearer static-token');
  });

  it('sends the request without credentials, with a warning naming the variables, when none are set', async () => {
    reset();
    const warnings: string[] = [];
    const logger = { debug() {}, warn: (_obj: object, msg?: string) => warnings.push(msg ?? '') };
    const result = await runner({ env: {}, logger }).run('getUser', { userId: 'u1' });
    expect(result).toMatchObject({
      kind: 'completed',
      failedStep: { stepId: 'get', statusCode: 401 },
    });
    expect(api.requests.at(-1)!.headers.authorization).toBeUndefined();
    expect(warnings.join('\n')).toContain(
      'SCIM_OAUTH2_CLIENT_ID, SCIM_OAUTH2_CLIENT_SECRET, SCIM_OAUTH2_ACCESS_TOKEN',
    );
  });
});

describe('server override', () => {
  it('sends a source to the URL given in sourceServers instead of its servers[0]', async () => {
    const other = await startFixtureApi();
    try {
      const overridden = await loadArazzo(docs.path('scim.arazzo.yaml'), {
        sourceServers: { scim: `${other.url}/scim2` },
      });
      const run = createRunner(overridden, { env: { SCIM_OAUTH2_ACCESS_TOKEN: 'x' } });
      await run.run('getUser', { userId: 'u1' });
      await run.close();
      expect(other.requests.map((r) => r.url)).toEqual(['/scim2/Users/u1']);
    } finally {
      await other.close();
    }
  });
});
