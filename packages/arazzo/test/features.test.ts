import { createRunner, type LoadedArazzo, loadArazzo, type Runner } from '@mcp-identity/arazzo';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FixtureApi, materialize, startFixtureApi } from './fixtures/api.js';

let api: FixtureApi;
let docs: ReturnType<typeof materialize>;
let loaded: LoadedArazzo;
let runner: Runner;
const delays: number[] = [];

beforeAll(async () => {
  api = await startFixtureApi();
  docs = materialize(['features.arazzo.yaml', 'scim.openapi.yaml'], api.url);
  loaded = await loadArazzo(docs.path('features.arazzo.yaml'));
  runner = createRunner(loaded, {
    env: { SCIM_OAUTH2_CLIENT_ID: 'scim-id', SCIM_OAUTH2_CLIENT_SECRET: 'scim-secret' },
    sleep: async (ms) => {
      delays.push(ms);
    },
    maxStepExecutions: 50,
  });
});

afterAll(async () => {
  await runner.close();
  await api.close();
  docs.remove();
});

function paths(): string[] {
  return api.requests.map((r) => r.url);
}

function reset() {
  api.requests.length = 0;
  delays.length = 0;
}

describe('loading', () => {
  it('resolves $ref inputs to components in the workflow summary', () => {
    expect(loaded.workflows[0]!.inputs).toEqual({
      type: 'object',
      properties: { word: { type: 'string' }, trace: { type: 'string' }, obj: { type: 'object' } },
    });
    expect(loaded.workflows.find((w) => w.workflowId === 'loop')!.outputs).toEqual([]);
  });
});

describe('runtime expressions', () => {
  it('evaluates every expression kind, keeping types, and encodes the request', async () => {
    reset();
    const inputs = { word: 'a b/c', trace: 't-1', obj: { count: 3, nested: ['zero', { one: 1 }] } };
    const result = await runner.run('expressions', inputs);
    expect(result.kind).toBe('completed');
    if (result.kind !== 'completed') return;
    const out = result.outputs;
    const get = api.requests[0]!;
    expect(get.url).toBe('/scim2/echo/a%20b%2Fc?q=prefix-a+b%2Fc-suffix&n=3&pageSize=50&lang=en');
    expect(out.url).toBe(`${api.url}${get.url}`);
    expect(out.method).toBe('GET');
    expect(out.status).toBe(200);
    expect(out.reqHeader).toBe('t-1');
    expect(out.reqQuery).toBe('prefix-a b/c-suffix');
    expect(out.reqPath).toBe('a b/c');
    expect(out.respType).toMatch(/^application\/json/);
    expect(out.respTypeAlias).toBe(out.respType);
    expect(out.receivedUrl).toBe(get.url);
    expect(out.missing).toBeNull();
    expect(out.sourceUrl).toBe('scim.openapi.yaml');
    expect(out.component).toEqual({ name: 'pageSize', in: 'query', value: 10 });
    expect(out.inputObj).toEqual(inputs.obj);
    expect(out.nested0).toBe('zero');
    expect(out.inputWord).toBe('a b/c');
    expect(out.workflowInput).toBe('a b/c');
    const headers = out.receivedHeaders as Record<string, string>;
    expect(headers['x-trace']).toBe('t-1');
    expect(headers['x-workflow']).toBe('from-step');
    expect(headers['x-default']).toBe('workflow-default');
    expect(headers.cookie).toBe('session=abc%20def');
    expect(out.received).toEqual({
      fromStep: 'GET',
      pointerIntoOutput: { one: 1 },
      count: 3,
      text: 'status 200 for a b/c',
      object: JSON.stringify(inputs.obj),
      literal: { keep: [1, true, null] },
    });
    expect(out.contentType).toBe('application/json');
    expect(out.requestField).toBe('GET');
  });

  it('sends form, text and whole-value payloads by content type', async () => {
    const result = await runner.run('textPayloads', { name: 'Zoë & co' });
    expect(result).toEqual({
      kind: 'completed',
      outputs: {
        form: { name: 'Zoë & co', scope: 'a b' },
        formType: 'application/x-www-form-urlencoded',
        text: 'Hello Zoë & co, {not an expression}',
        whole: 'Zoë & co',
      },
    });
  });
});

describe('multipart bodies', () => {
  it('sends an object payload as multipart/form-data fields', async () => {
    const result = await runner.run('multipart', {});
    expect(result.kind).toBe('completed');
    if (result.kind !== 'completed') return;
    expect(result.outputs.type).toMatch(/^multipart\/form-data; boundary=/);
    const body = result.outputs.body as string;
    expect(body).toContain('name="name"\r\n\r\nreport\r\n');
    expect(body).toContain('name="meta"\r\n\r\n{"size":2}\r\n');
  });
});

describe('criteria', () => {
  it('passes when simple, regex and jsonpath criteria all hold (strings compare case-insensitively)', async () => {
    const result = await runner.run('criteria', {
      expectMethod: 'get',
      urlPattern: '^/scim2/echo/x$',
    });
    expect(result).toEqual({ kind: 'completed', outputs: { method: 'GET' } });
  });

  it('fails the step when one criterion does not hold', async () => {
    const simple = await runner.run('criteria', { expectMethod: 'POST', urlPattern: '^/scim2/' });
    expect(simple).toMatchObject({ failedStep: { stepId: 'check', statusCode: 200 } });
    const regex = await runner.run('criteria', { expectMethod: 'GET', urlPattern: '^/other' });
    expect(regex).toMatchObject({ failedStep: { stepId: 'check' } });
  });
});

describe('actions', () => {
  it('retries up to retryLimit, waiting retryAfter seconds, then succeeds', async () => {
    reset();
    api.flaky.set('k1', 2);
    const result = await runner.run('retrying', { key: 'k1' });
    expect(result).toEqual({ kind: 'completed', outputs: { status: 'ok' } });
    expect(paths().filter((p) => p.startsWith('/scim2/flaky'))).toHaveLength(3);
    expect(delays).toEqual([500, 500]);
  });

  it('prefers the response Retry-After header to retryAfter', async () => {
    reset();
    api.flaky.set('k2', 1);
    await runner.run('retrying', { key: 'k2', hint: '1' });
    expect(delays).toEqual([2000]);
  });

  it('moves on to the next failure action once the retries are exhausted', async () => {
    reset();
    api.flaky.set('k3', 5);
    const result = await runner.run('retrying', { key: 'k3' });
    // Stopped at a 5xx: no answer to rely on, so an error rather than outputs (a 4xx stays a
    // completed run with failedStep).
    expect(result).toEqual({
      kind: 'error',
      stepId: 'call',
      message: `step "call": GET ${api.url}/scim2/flaky: the server answered HTTP 503: {"status":"busy"}`,
      failure: { kind: 'server-error', applied: 'no', retrySafe: true },
    });
    expect(paths()).toHaveLength(3);
  });

  it('retries once by default (workflow-level failure action) and uses component actions', async () => {
    reset();
    api.flaky.set('k4', 2);
    const result = await runner.run('retryDefaults', { key: 'k4' });
    expect(result).toMatchObject({
      kind: 'error',
      stepId: 'call',
      failure: { kind: 'server-error' },
    });
    expect(paths()).toHaveLength(2);
    reset();
    api.flaky.set('k5', 1);
    expect(await runner.run('retryDefaults', { key: 'k5' })).toEqual({
      kind: 'completed',
      outputs: { status: 'ok' },
    });
  });

  it('follows goto and end: first matching action wins, step actions override workflow defaults', async () => {
    reset();
    const skipping = await runner.run('jumps', { skip: true });
    expect(skipping).toEqual({ kind: 'completed', outputs: { done: '/scim2/echo/third' } });
    expect(paths()).toEqual(['/scim2/echo/first', '/scim2/echo/third']);
    reset();
    await runner.run('jumps', { skip: false });
    expect(paths()).toEqual(['/scim2/echo/first', '/scim2/echo/second', '/scim2/echo/third']);
  });

  it('recovers from a failure with the first failure action whose criteria hold', async () => {
    reset();
    const result = await runner.run('recoverByStep', {});
    expect(result).toEqual({ kind: 'completed', outputs: { api: 'scim' } });
    expect(paths()).toEqual(['/oauth2/token', '/scim2/Users/nobody', '/scim2/ping']);
  });

  it('transfers to another workflow on a goto workflowId', async () => {
    const result = await runner.run('fallbackOnFailure', {});
    expect(result).toEqual({ kind: 'completed', outputs: { fallbackResult: 'scim' } });
  });

  it('stops a goto loop after the step execution limit', async () => {
    const result = await runner.run('loop', {});
    expect(result).toMatchObject({ kind: 'error', stepId: 'again' });
    if (result.kind === 'error') expect(result.message).toContain('more than 50 steps');
  });
});

describe('nested workflows and dependsOn', () => {
  it('runs a workflowId step with its parameters as the child inputs and maps $outputs', async () => {
    const result = await runner.run('parent', { word: 'w' });
    expect(result).toEqual({
      kind: 'completed',
      outputs: { echoed: '/scim2/echo/child-w', result: 'scim' },
    });
  });

  it('sends a lone surrogate in a path parameter as U+FFFD, as URLs encode it, rather than failing', async () => {
    expect(await runner.run('child', { value: 'a\ud800' })).toEqual({
      kind: 'completed',
      outputs: { echoed: '/scim2/echo/a%EF%BF%BD' },
    });
  });

  it('fills in the defaults of the inputs schema', async () => {
    expect(await runner.run('child', {})).toEqual({
      kind: 'completed',
      outputs: { echoed: '/scim2/echo/dflt' },
    });
  });

  it('runs dependsOn workflows first and exposes their inputs and outputs under $workflows', async () => {
    reset();
    const result = await runner.run('dependent', { value: 'v' });
    expect(result).toEqual({
      kind: 'completed',
      outputs: { header: '/scim2/echo/v', url: '/scim2/echo/after-v' },
    });
    expect(paths()).toEqual(['/scim2/echo/v', '/scim2/echo/after-v']);
  });

  it('ends with an error when a dependency fails', async () => {
    const result = await runner.run('dependsOnFailure', {});
    expect(result).toEqual({
      kind: 'error',
      message: 'dependency workflow "getMissingUser" failed at step "get"',
      failure: { kind: 'workflow', applied: 'no', retrySafe: true },
    });
  });

  it('reports an unknown workflow', async () => {
    expect(await runner.run('nope', {})).toEqual({
      kind: 'error',
      message: 'Workflow nope not found in Arazzo document',
      failure: { kind: 'workflow', applied: 'no', retrySafe: true },
    });
  });
});

describe('transport failures', () => {
  it('ends with an error naming the step when a request times out', async () => {
    const quick = createRunner(loaded, { env: {}, timeoutMs: 200 });
    try {
      const result = await quick.run('slow', {});
      expect(result).toEqual({
        kind: 'error',
        stepId: 'wait',
        message: `step "wait": GET ${api.url}/scim2/slow: timed out after 200 ms`,
        failure: { kind: 'timeout', applied: 'no', retrySafe: true },
      });
    } finally {
      await quick.close();
    }
  });

  it('names the outer step, the nested workflow and the inner step of a failure inside it', async () => {
    const quick = createRunner(loaded, { env: {}, timeoutMs: 200 });
    try {
      expect(await quick.run('nestedSlow', {})).toEqual({
        kind: 'error',
        stepId: 'outer',
        message: `step "outer": workflow "slow": step "wait": GET ${api.url}/scim2/slow: timed out after 200 ms`,
        failure: { kind: 'timeout', applied: 'no', retrySafe: true },
      });
    } finally {
      await quick.close();
    }
  });

  it('ends with an error when a response is larger than maxResponseBytes, declared or streamed', async () => {
    const small = createRunner(loaded, { env: {}, maxResponseBytes: 1024 });
    try {
      expect(await small.run('big', {})).toEqual({
        kind: 'error',
        stepId: 'download',
        message: `step "download": GET ${api.url}/scim2/big: response of 65536 bytes exceeds the limit of 1024 bytes`,
        failure: { kind: 'bad-response', applied: 'no', retrySafe: true },
      });
      expect(await small.run('chunked', {})).toEqual({
        kind: 'error',
        stepId: 'download',
        message: `step "download": GET ${api.url}/scim2/chunked: response exceeds the limit of 1024 bytes`,
        failure: { kind: 'bad-response', applied: 'no', retrySafe: true },
      });
    } finally {
      await small.close();
    }
  });

  it('ends with an error, and the process lives on, when a response over the limit arrived whole', async () => {
    // A declared length over the limit used to destroy undici's body stream after the whole
    // answer had arrived: an 'error' event nobody listened to, which ends the process.
    const small = createRunner(loaded, { env: {}, maxResponseBytes: 1024 });
    try {
      for (let i = 0; i < 3; i++) {
        expect(await small.run('smallOverLimit', {})).toEqual({
          kind: 'error',
          stepId: 'download',
          message: `step "download": GET ${api.url}/scim2/small-over-limit: response of 4096 bytes exceeds the limit of 1024 bytes`,
          failure: { kind: 'bad-response', applied: 'no', retrySafe: true },
        });
      }
      await new Promise((resolve) => setImmediate(resolve));
      expect((await runner.run('big', {})).kind).toBe('completed');
    } finally {
      await small.close();
    }
  });

  it('ends with an error naming the step when the connection is refused', async () => {
    const dead = await loadArazzo(docs.path('features.arazzo.yaml'), {
      sourceServers: { api: 'http://127.0.0.1:1/scim2' },
    });
    const run = createRunner(dead, { env: {} });
    try {
      expect(await run.run('fallback', {})).toEqual({
        kind: 'error',
        stepId: 'ping',
        message: 'step "ping": GET http://127.0.0.1:1/scim2/ping: connection refused',
        failure: { kind: 'connection', applied: 'no', retrySafe: true },
      });
    } finally {
      await run.close();
    }
  });
});
