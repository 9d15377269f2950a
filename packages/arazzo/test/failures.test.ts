import { createRunner, type LoadedArazzo, loadArazzo, type Runner } from '@mcp-identity/arazzo';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { materialize } from './fixtures/api.js';
import { type FaultyApi, startFaultyApi, TOKEN_GRANTED } from './fixtures/faulty-api.js';

// Nothing listens on port 9 (discard) of the loopback interface: a refused connection.
const CLOSED = 'http://127.0.0.1:9';
const ENV = { SCIM_OAUTH2_CLIENT_ID: 'id', SCIM_OAUTH2_CLIENT_SECRET: 'secret' };
const FILES = ['failures.arazzo.yaml', 'failures.openapi.yaml'];
const SCIM_ERROR = (status: number, detail: string) => ({
  answer: status,
  type: 'application/scim+json',
  body: JSON.stringify({
    schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
    detail,
    status: String(status),
  }),
});

let api: FaultyApi;
let docs: ReturnType<typeof materialize>;
let loaded: LoadedArazzo;
let runner: Runner;
const runners: Runner[] = [];
const removals: (() => void)[] = [];

/** A runner on the fixture documents with the token endpoint and API at `tokenAt` and `apiAt`. */
async function runnerFor(tokenAt: string, apiAt: string): Promise<Runner> {
  const files = materialize(FILES, tokenAt);
  removals.push(files.remove);
  const doc = await loadArazzo(files.path('failures.arazzo.yaml'), {
    sourceServers: { scim: `${apiAt}/scim2` },
  });
  const created = createRunner(doc, { env: ENV, timeoutMs: 300 });
  runners.push(created);
  return created;
}

beforeAll(async () => {
  api = await startFaultyApi();
  docs = materialize(FILES, api.url);
  loaded = await loadArazzo(docs.path('failures.arazzo.yaml'));
  runner = createRunner(loaded, { env: ENV, timeoutMs: 300 });
  runners.push(runner);
});

// A test that changes the token endpoint's answer does not leave it changed for the next.
afterEach(() => {
  api.on('POST', '/oauth2/token', TOKEN_GRANTED);
});

afterAll(async () => {
  for (const r of runners) await r.close();
  await api.close();
  docs.remove();
  for (const remove of removals) remove();
});

describe('a failed token request', () => {
  it('is a token failure, not applied, and the API request is never sent', async () => {
    const dead = await runnerFor(CLOSED, api.url);
    const before = api.received.length;
    expect(await dead.run('deleteUser', {})).toEqual({
      kind: 'error',
      stepId: 'remove',
      message: `step "remove": token request for security scheme "OAuth2" of source "scim" (${CLOSED}/oauth2/token) failed: POST ${CLOSED}/oauth2/token: connection refused`,
      failure: { kind: 'token', applied: 'no', retrySafe: true },
    });
    expect(api.received.slice(before)).toEqual([]);
  });

  it('is a token failure when the token endpoint answers 500, 401 or something unparsable', async () => {
    for (const [fault, cause] of [
      [{ answer: 500, body: 'upstream down', type: 'text/plain' }, 'HTTP 500: upstream down'],
      [
        {
          answer: 401,
          body: JSON.stringify({ error: 'invalid_client', error_description: 'bad secret' }),
        },
        'HTTP 401 invalid_client: bad secret',
      ],
      [{ answer: 200, body: '{"access_token": ' }, 'the answer is not JSON'],
    ] as const) {
      api.on('POST', '/oauth2/token', fault);
      const result = await runner.run('createUser', {});
      expect(result).toMatchObject({
        kind: 'error',
        failure: { kind: 'token', applied: 'no', retrySafe: true },
      });
      if (result.kind === 'error') expect(result.message).toMatch(new RegExp(`failed: ${cause}$`));
    }
  });
});

describe('an API request that fails', () => {
  it('was not sent when the connection is refused: not applied, even for a create', async () => {
    const dead = await runnerFor(api.url, CLOSED);
    expect(await dead.run('createUser', {})).toEqual({
      kind: 'error',
      stepId: 'create',
      message: `step "create": POST ${CLOSED}/scim2/Users: connection refused`,
      failure: { kind: 'connection', applied: 'no', retrySafe: true },
    });
  });

  it('has an unknown outcome when a create times out or its connection drops after sending', async () => {
    api.on('POST', '/scim2/Users', 'hang');
    expect(await runner.run('createUser', {})).toEqual({
      kind: 'error',
      stepId: 'create',
      message: `step "create": POST ${api.url}/scim2/Users: timed out after 300 ms`,
      failure: { kind: 'timeout', applied: 'unknown', retrySafe: false },
    });
    api.on('POST', '/scim2/Users', 'reset');
    expect(await runner.run('createUser', {})).toMatchObject({
      kind: 'error',
      failure: { kind: 'connection', applied: 'unknown', retrySafe: false },
    });
  });

  it('changed nothing when a read times out', async () => {
    api.on('GET', '/scim2/Users/u1', 'hang');
    expect(await runner.run('getUser', {})).toMatchObject({
      kind: 'error',
      failure: { kind: 'timeout', applied: 'no', retrySafe: true },
    });
  });
});

describe('a 5xx the workflow stops at', () => {
  it('is a server error naming the answer, its outcome unknown for a write', async () => {
    api.on('POST', '/scim2/Users', SCIM_ERROR(500, 'database unavailable'));
    expect(await runner.run('createUser', {})).toEqual({
      kind: 'error',
      stepId: 'create',
      message: `step "create": POST ${api.url}/scim2/Users: the server answered HTTP 500: database unavailable`,
      failure: { kind: 'server-error', applied: 'unknown', retrySafe: false },
    });
  });

  it('may be retried when the write is idempotent (DELETE)', async () => {
    api.on('DELETE', '/scim2/Users/u1', { answer: 503 });
    expect(await runner.run('deleteUser', {})).toMatchObject({
      kind: 'error',
      message: `step "remove": DELETE ${api.url}/scim2/Users/u1: the server answered HTTP 503`,
      failure: { kind: 'server-error', applied: 'unknown', retrySafe: true },
    });
  });

  it('reports a change an earlier step made', async () => {
    api.on('POST', '/scim2/Users', { answer: 201, body: JSON.stringify({ id: 'u1' }) });
    api.on('GET', '/scim2/Users/u1', { answer: 502 });
    expect(await runner.run('createThenRead', {})).toMatchObject({
      kind: 'error',
      stepId: 'read',
      failure: { kind: 'server-error', applied: 'yes', retrySafe: false },
    });
  });
});

describe('an answer that cannot be read', () => {
  it('is a bad response: applied when the create was accepted, not when it was refused', async () => {
    api.on('POST', '/scim2/Users', {
      answer: 201,
      body: '{"id": "u',
      type: 'application/scim+json',
    });
    expect(await runner.run('createUser', {})).toEqual({
      kind: 'error',
      stepId: 'create',
      message: `step "create": POST ${api.url}/scim2/Users: the HTTP 201 answer is not valid JSON (application/scim+json)`,
      failure: { kind: 'bad-response', applied: 'yes', retrySafe: false },
    });
    api.on('POST', '/scim2/Users', { answer: 409, body: '<html>', type: 'application/json' });
    expect(await runner.run('createUser', {})).toMatchObject({
      kind: 'error',
      failure: { kind: 'bad-response', applied: 'no', retrySafe: true },
    });
  });
});

describe('a 4xx refusal', () => {
  it('stays a completed run whose outputs carry the error, with no failure', async () => {
    api.on('POST', '/scim2/Users', SCIM_ERROR(409, 'User already exists'));
    expect(await runner.run('createUser', {})).toEqual({
      kind: 'completed',
      outputs: { id: null, error: 'User already exists' },
      failedStep: { stepId: 'create', statusCode: 409 },
    });
  });
});
