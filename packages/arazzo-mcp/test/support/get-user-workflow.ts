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
