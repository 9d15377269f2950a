import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { classifyOutcome, classifyResult } from '../src/kit/call-class.js';

// The shapes of the SCIM MCP server's results (arazzo-mcp README, *Results*).
const text = (value: string, isError: boolean, structuredContent?: Record<string, unknown>) =>
  ({
    content: [{ type: 'text', text: value }],
    isError,
    ...(structuredContent ? { structuredContent } : {}),
  }) as CallToolResult;

describe('soak call classes', () => {
  it('acknowledges a completed workflow, with or without outputs', () => {
    const created = text(
      "Workflow Success. Outputs: {'id': 'u1', 'userName': 'x', 'error': None, 'errorStatus': None}",
      false,
      { id: 'u1', userName: 'x', error: null, errorStatus: null },
    );
    expect(classifyResult(created).class).toBe('acknowledged');
    const deleted = text(
      "Workflow Result: WorkflowExecutionResult(status=workflow_complete, workflow_id='deleteUser', outputs={}, inputs={'userId': 'u1'}, error=None)",
      false,
      {},
    );
    expect(classifyResult(deleted).class).toBe('acknowledged');
  });

  it("counts the IdP's 4xx answer (spec §2.11 rule 5: isError false) as refused", () => {
    const conflict = text(
      "Workflow Success. Outputs: {'id': None, 'userName': None, 'error': 'User exists', 'errorStatus': '409'}",
      false,
      { id: null, userName: null, error: 'User exists', errorStatus: '409' },
    );
    expect(classifyResult(conflict)).toEqual({ class: 'refused', why: 'IdP 409' });
    const missing = text(
      "Workflow Result: WorkflowExecutionResult(status=error, workflow_id='deleteUser', outputs={}, inputs={'userId': 'u1'}, error='Step removeUser failed its success criteria (HTTP 404)')",
      false,
      {},
    );
    expect(classifyResult(missing).class).toBe('refused');
  });

  it('reads whether a failed workflow was applied from its Failure line', () => {
    const tokenDown = text(
      'Workflow Error: step "addUser": token request for security scheme "OAuth2" of source "scim2" (https://localhost:9443/oauth2/token) failed: connection refused\nFailure: token. Applied: no — nothing was changed; retrying is safe.',
      true,
    );
    expect(classifyResult(tokenDown)).toEqual({ class: 'failed', why: 'token, applied no' });
    const timedOut = text(
      'Workflow Error: step "addUser": POST https://localhost:9443/scim2/Users: timed out after 30000 ms\nFailure: timeout. Applied: unknown — check before retrying.',
      true,
    );
    expect(classifyResult(timedOut)).toEqual({ class: 'unknown', why: 'timeout, applied unknown' });
    const halfDone = text(
      'Workflow Error: step "addUser": unparsable answer\nFailure: bad-response. Applied: yes — the API accepted a change before the failure; check before retrying.',
      true,
    );
    expect(classifyResult(halfDone).class).toBe('unknown');
  });

  it('never takes a "Workflow Error" with isError false for a success (the issue-37 lie)', () => {
    const lie = text('Workflow Error: token request failed: connection refused', false, {});
    expect(classifyResult(lie).class).toBe('unknown');
    expect(classifyOutcome({ kind: 'result', result: lie }, { writes: false }).class).toBe(
      'failed',
    );
  });

  it('counts an invalid call and a bare tool error apart', () => {
    expect(classifyResult(text('MCP error -32602: Input validation error: bad', true)).class).toBe(
      'refused',
    );
    expect(classifyResult(text('something broke', true)).class).toBe('unknown');
  });
});
