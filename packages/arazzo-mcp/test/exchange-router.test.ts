import type { WorkflowResult } from '@mcp-identity/arazzo';
import {
  createArazzoMcpApp,
  createToolCatalog,
  type ToolCatalog,
  type WorkflowRunner,
} from '@mcp-identity/arazzo-mcp';
import { createLogger } from '@mcp-identity/common';
import { startTestServer } from '@mcp-identity/common/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { GET_USER_WORKFLOWS, getUser, MCP_POST_HEADERS } from './support/get-user-workflow.js';

const workflows = GET_USER_WORKFLOWS;

/**
 * A run for `<a>-after-<b>` finishes only once the run for `<b>` has started; `startOf(id)`
 * resolves when the run for `id` starts.
 */
function orderedRunner(): WorkflowRunner & { startOf(id: string): Promise<void> } {
  const started = new Map<string, () => void>();
  const starts = new Map<string, Promise<void>>();
  const startOf = (id: string) => {
    if (!starts.has(id)) {
      starts.set(id, new Promise<void>((resolve) => started.set(id, resolve)));
    }
    return starts.get(id) as Promise<void>;
  };
  return {
    startOf,
    async run(_workflowId, inputs): Promise<WorkflowResult> {
      const id = String(inputs.userId);
      void startOf(id);
      started.get(id)?.();
      const after = /-after-(.+)$/.exec(id)?.[1];
      if (after !== undefined) await startOf(after);
      return { kind: 'completed', outputs: { user: { id } } };
    },
  };
}

const logger = createLogger({ level: 'silent', pretty: false });
let baseUrl: string;

beforeAll(async () => {
  const catalog = createToolCatalog(workflows, orderedRunner());
  baseUrl = (await startTestServer(createArazzoMcpApp({ catalog, logger }))).url;
});

async function post(body: unknown, signal?: AbortSignal) {
  const response = await fetch(`${baseUrl}/mcp`, {
    method: 'POST',
    headers: MCP_POST_HEADERS,
    body: JSON.stringify(body),
    signal,
  });
  return { status: response.status, body: (await response.json()) as unknown };
}

const answer = (id: number | string, userId: string) => ({
  jsonrpc: '2.0',
  id,
  result: expect.objectContaining({ structuredContent: { user: { id: userId } } }),
});

describe('one MCP server for every stateless HTTP exchange', () => {
  it('keeps concurrent calls with the same JSON-RPC id apart, in any completion order', async () => {
    // The first call finishes only after the second started: each must get its own answer.
    const [first, second] = await Promise.all([
      post(getUser(7, 'a-after-b')),
      post(getUser(7, 'b')),
    ]);
    expect(first).toEqual({ status: 200, body: answer(7, 'a-after-b') });
    expect(second).toEqual({ status: 200, body: answer(7, 'b') });
  });

  it('answers 50 concurrent exchanges, all with id 1, each with its own result', async () => {
    const userIds = Array.from({ length: 50 }, (_, i) =>
      i % 2 === 0 ? `u${i}-after-u${i + 1}` : `u${i}`,
    );
    const results = await Promise.all(userIds.map((userId) => post(getUser(1, userId))));
    expect(results).toEqual(userIds.map((userId) => ({ status: 200, body: answer(1, userId) })));
  });

  it('answers a batch in one exchange while another exchange uses the same ids', async () => {
    const [batch, single] = await Promise.all([
      post([getUser(1, 'x-after-y'), getUser('two', 'z')]),
      post(getUser(1, 'y')),
    ]);
    expect(batch.status).toBe(200);
    expect(batch.body).toEqual(
      expect.arrayContaining([answer(1, 'x-after-y'), answer('two', 'z')]),
    );
    expect(single).toEqual({ status: 200, body: answer(1, 'y') });
  });

  it('keeps serving after a client abandons its call, and ignores its late answer', async () => {
    const abandoned = new AbortController();
    const pending = post(getUser(3, 'gone-after-back'), abandoned.signal);
    abandoned.abort();
    await expect(pending).rejects.toThrow();
    // The abandoned run completes once `back` starts; its answer has nowhere to go.
    expect(await post(getUser(3, 'back'))).toEqual({ status: 200, body: answer(3, 'back') });
    expect(await post(getUser(3, 'again'))).toEqual({ status: 200, body: answer(3, 'again') });
  });

  it("does not let a client cancel another client's request", async () => {
    // A fresh server: the victim's call is the first request it sees.
    const runner = orderedRunner();
    const catalog = createToolCatalog(workflows, runner);
    const url = (await startTestServer(createArazzoMcpApp({ catalog, logger }))).url;
    const send = (body: unknown) =>
      fetch(`${url}/mcp`, {
        method: 'POST',
        headers: MCP_POST_HEADERS,
        body: JSON.stringify(body),
      });
    const victim = send(getUser(9, 'kept-after-cancel'));
    await runner.startOf('kept-after-cancel');
    for (const requestId of [1, 9]) {
      const cancel = await send({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId, reason: 'not yours' },
      });
      expect(cancel.status).toBe(202);
    }
    await send(getUser(10, 'cancel'));
    const answered = await Promise.race([
      victim.then(async (response) => response.json()),
      deadline(5_000),
    ]);
    expect(answered).toEqual(answer(9, 'kept-after-cancel'));
  });
});

function deadline(ms: number): Promise<string> {
  return new Promise((resolve) => setTimeout(() => resolve('no answer in time'), ms).unref());
}

describe('plain tools/call requests, answered by the router without the SDK server', () => {
  // The router answers `tools/call` with only `name` and `arguments` itself; the same call with
  // `_meta` goes through the SDK server. Both must give the same answers.
  let url: string;

  beforeAll(async () => {
    const catalog = createToolCatalog(workflows, orderedRunner());
    const failing: ToolCatalog = {
      ...catalog,
      async call(name, args) {
        if (name === 'explodes') throw Object.assign(new Error('exploded'), { data: { at: 1 } });
        if (name === 'fails') throw new Error('failed');
        return catalog.call(name, args);
      },
    };
    url = (await startTestServer(createArazzoMcpApp({ catalog: failing, logger }))).url;
  });

  const call = async (params: Record<string, unknown>) => {
    const response = await fetch(`${url}/mcp`, {
      method: 'POST',
      headers: MCP_POST_HEADERS,
      body: JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/call', params }),
    });
    return { status: response.status, body: (await response.json()) as unknown };
  };

  it.each([
    ['a call', { name: 'get_user', arguments: { userId: 'u1' } }],
    ['invalid arguments', { name: 'get_user', arguments: { userId: 7 } }],
    ['no arguments', { name: 'get_user' }],
    ['an unknown tool', { name: 'nope', arguments: {} }],
    ['a tool that throws an error with data', { name: 'explodes', arguments: {} }],
    ['a tool that throws', { name: 'fails', arguments: {} }],
  ])('answers %s as the SDK server does', async (_case, params) => {
    const viaRouter = await call(params);
    const viaServer = await call({ ...params, _meta: { note: 'through the SDK server' } });
    expect(viaRouter).toEqual(viaServer);
    expect(viaRouter.status).toBe(200);
  });
});
