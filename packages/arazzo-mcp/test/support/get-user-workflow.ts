import type { WorkflowSummary } from '@mcp-identity/arazzo';

/** One workflow, `getUser(userId) → user`: the tool `get_user` of the transport tests. */
export const GET_USER_WORKFLOWS: WorkflowSummary[] = [
  {
    workflowId: 'getUser',
    summary: 'Get one user by id',
    inputs: { type: 'object', properties: { userId: { type: 'string' } } },
    outputs: ['user'],
  },
];

/** The headers of a well-formed POST to a stateless Streamable HTTP endpoint. */
export const MCP_POST_HEADERS: Record<string, string> = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-06-18',
};

/** A `tools/call` of `get_user` under the JSON-RPC id `id`. */
export const getUser = (id: number | string, userId: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'get_user', arguments: { userId } },
});

/** A runner whose `get_user` answers `{ user: { id: <userId> } }`. */
export const ECHO_USER_RUNNER = {
  run: async (_workflowId: string, inputs: Record<string, unknown>) => ({
    kind: 'completed' as const,
    outputs: { user: { id: inputs.userId } },
  }),
};
