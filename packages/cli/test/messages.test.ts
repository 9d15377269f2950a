import { describe, expect, it } from 'vitest';
import { saidOnce } from '../src/stack/clients.js';

describe('saidOnce', () => {
  it('says the SDK prefix of a JSON-RPC error once when the server already sent it', () => {
    expect(saidOnce('MCP error -32602: MCP error -32602: Tool nosuch not found')).toBe(
      'MCP error -32602: Tool nosuch not found',
    );
    expect(saidOnce('MCP error -32603: MCP error -32603: MCP error -32603: boom')).toBe(
      'MCP error -32603: boom',
    );
    expect(saidOnce('MCP error -32602: Input validation error')).toBe(
      'MCP error -32602: Input validation error',
    );
  });
});
