import type { RunFailure, WorkflowResult, WorkflowSummary } from '@mcp-identity/arazzo';
import { createToolCatalog, type WorkflowRunner } from '@mcp-identity/arazzo-mcp';
import { describe, expect, it } from 'vitest';

const workflows: WorkflowSummary[] = [
  {
    workflowId: 'searchUsers',
    summary: 'Search users',
    inputs: {
      type: 'object',
      properties: { filter: { type: 'string' }, count: { type: 'integer' } },
    },
    outputs: ['users', 'error', 'errorStatus'],
  },
  {
    workflowId: 'createUser',
    inputs: {
      type: 'object',
      properties: { user_data: { type: 'object' }, tags: { type: 'array' } },
    },
    outputs: ['id'],
  },
  {
    workflowId: 'deleteUser',
    inputs: { type: 'object', properties: { userId: { type: 'string' } } },
    outputs: [],
  },
];

/** Records every run and answers with a fixed result. */
function stubRunner(result: WorkflowResult): WorkflowRunner & { calls: unknown[][] } {
  const calls: unknown[][] = [];
  return {
    calls,
    async run(workflowId, inputs) {
      calls.push([workflowId, inputs]);
      return result;
    },
  };
}

const text = (result: { content: unknown[] }) => (result.content[0] as { text: string }).text;

describe('tool catalog', () => {
  it('reports a completed workflow as Workflow Success with a Python dict and structured outputs', async () => {
    const runner = stubRunner({
      kind: 'completed',
      outputs: { errorStatus: null, users: [{ id: 'u1', name: "O'Neil" }], error: null },
    });
    const catalog = createToolCatalog(workflows, runner);
    const result = await catalog.call('search_users', { filter: 'userName eq "a"', count: 2 });
    expect(runner.calls).toEqual([['searchUsers', { filter: 'userName eq "a"', count: 2 }]]);
    expect(text(result)).toBe(
      `Workflow Success. Outputs: {'users': [{'id': 'u1', 'name': "O'Neil"}], 'error': None, 'errorStatus': None}`,
    );
    expect(result.isError).toBe(false);
    expect(result.structuredContent).toEqual({
      users: [{ id: 'u1', name: "O'Neil" }],
      error: null,
      errorStatus: null,
    });
  });

  it('keeps a failed step (HTTP 4xx) a Workflow Success unless asked otherwise', async () => {
    const failed: WorkflowResult = {
      kind: 'completed',
      outputs: { users: null, error: 'Invalid filter', errorStatus: '400' },
      failedStep: { stepId: 'search', statusCode: 400 },
    };
    const plain = await createToolCatalog(workflows, stubRunner(failed)).call('search_users', {
      filter: 'bad',
      count: 1,
    });
    expect(text(plain)).toBe(
      "Workflow Success. Outputs: {'users': None, 'error': 'Invalid filter', 'errorStatus': '400'}",
    );
    expect(plain.isError).toBe(false);

    const strict = await createToolCatalog(workflows, stubRunner(failed), {
      httpErrorsAsToolErrors: true,
    }).call('search_users', { filter: 'bad', count: 1 });
    expect(strict.isError).toBe(true);
    expect(strict.structuredContent).toBeUndefined();
  });

  it('reports a failure without an answer as a tool error saying what failed and whether it applied', async () => {
    const error = (failure: RunFailure): WorkflowResult => ({
      kind: 'error',
      message: 'step "search": GET http://127.0.0.1:9/Users: connection refused',
      stepId: 'search',
      failure,
    });
    const lines = new Map<RunFailure, string>([
      [
        { kind: 'connection', applied: 'no', retrySafe: true },
        'Failure: connection. Applied: no — nothing was changed; retrying is safe.',
      ],
      [
        { kind: 'timeout', applied: 'unknown', retrySafe: false },
        'Failure: timeout. Applied: unknown — check before retrying.',
      ],
      [
        { kind: 'server-error', applied: 'unknown', retrySafe: true },
        'Failure: server-error. Applied: unknown — the request may have been carried out; it is idempotent, so retrying is safe.',
      ],
      [
        { kind: 'bad-response', applied: 'yes', retrySafe: false },
        'Failure: bad-response. Applied: yes — the API accepted a change before the failure; check before retrying.',
      ],
    ]);
    for (const [failure, line] of lines) {
      for (const httpErrorsAsToolErrors of [false, true]) {
        const result = await createToolCatalog(workflows, stubRunner(error(failure)), {
          httpErrorsAsToolErrors,
        }).call('search_users', { filter: 'x', count: 1 });
        expect(result).toEqual({
          content: [
            {
              type: 'text',
              text: `Workflow Error: step "search": GET http://127.0.0.1:9/Users: connection refused\n${line}`,
            },
          ],
          isError: true,
        });
      }
    }
  });

  it('turns a throwing runner into a tool error of unknown outcome instead of a broken call', async () => {
    const catalog = createToolCatalog(workflows, {
      run: async () => {
        throw new Error('boom');
      },
    });
    const result = await catalog.call('delete_user', { userId: 'u1' });
    expect(text(result)).toBe(
      'Workflow Error: boom\nFailure: workflow. Applied: unknown — check before retrying.',
    );
    expect(result.isError).toBe(true);
  });

  it('prints the execution result when the workflow declares no outputs', async () => {
    const ok = await createToolCatalog(
      workflows,
      stubRunner({ kind: 'completed', outputs: {} }),
    ).call('delete_user', { userId: 'u1' });
    expect(text(ok)).toBe(
      "Workflow Result: WorkflowExecutionResult(status=workflow_complete, workflow_id='deleteUser', outputs={}, inputs={'userId': 'u1'}, error=None)",
    );
    const failed = await createToolCatalog(
      workflows,
      stubRunner({
        kind: 'completed',
        outputs: {},
        failedStep: { stepId: 'del', statusCode: 404 },
      }),
    ).call('delete_user', { userId: 'u1' });
    expect(text(failed)).toBe(
      "Workflow Result: WorkflowExecutionResult(status=error, workflow_id='deleteUser', outputs={}, inputs={'userId': 'u1'}, error='Step del failed its success criteria (HTTP 404)')",
    );
  });

  it('returns JSON text with --result-format json', async () => {
    const catalog = createToolCatalog(
      workflows,
      stubRunner({ kind: 'completed', outputs: { users: [], error: null, errorStatus: null } }),
      { resultFormat: 'json' },
    );
    const result = await catalog.call('search_users', { filter: 'x', count: 1 });
    expect(JSON.parse(text(result))).toEqual({ users: [], error: null, errorStatus: null });
  });

  it('parses object and array arguments as JSON before running the workflow', async () => {
    const runner = stubRunner({ kind: 'completed', outputs: { id: 'u9' } });
    const catalog = createToolCatalog(workflows, runner);
    const result = await catalog.call('create_user', {
      userData: '{"userName":"bob","emails":["b@example.com"]}',
      tags: '["a","b"]',
    });
    expect(text(result)).toBe("Workflow Success. Outputs: {'id': 'u9'}");
    expect(runner.calls).toEqual([
      [
        'createUser',
        { user_data: { userName: 'bob', emails: ['b@example.com'] }, tags: ['a', 'b'] },
      ],
    ]);
  });

  it('rejects invalid JSON and JSON of the wrong kind, naming the argument', async () => {
    const runner = stubRunner({ kind: 'completed', outputs: { id: 'u9' } });
    const catalog = createToolCatalog(workflows, runner);
    const result = await catalog.call('create_user', { userData: '{userName: bob}', tags: '{}' });
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(
      /^MCP error -32602: Input validation error: Invalid arguments for tool create_user: argument 'tags' must be a JSON array encoded as a string; argument 'userData' must be a JSON object encoded as a string, but it is not valid JSON \(.+\)$/,
    );
    expect(runner.calls).toEqual([]);
  });

  it('rejects missing and mistyped arguments without running the workflow', async () => {
    const runner = stubRunner({ kind: 'completed', outputs: {} });
    const catalog = createToolCatalog(workflows, runner);
    const result = await catalog.call('search_users', { count: '5' });
    expect(result.isError).toBe(true);
    expect(text(result)).toBe(
      "MCP error -32602: Input validation error: Invalid arguments for tool search_users: missing required argument 'filter'; argument 'count' must be integer",
    );
    expect(runner.calls).toEqual([]);
  });

  it('refuses an unknown tool with a JSON-RPC invalid-params error', async () => {
    const catalog = createToolCatalog(workflows, stubRunner({ kind: 'completed', outputs: {} }));
    await expect(catalog.call('nope', {})).rejects.toMatchObject({ code: -32602 });
  });
});
