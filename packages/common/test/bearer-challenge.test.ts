import { bearerChallenge } from '@mcp-identity/common';
import { describe, expect, it } from 'vitest';

describe('bearerChallenge (RFC 6750 §3)', () => {
  it('is the bare scheme without parameters', () => {
    expect(bearerChallenge()).toBe('Bearer');
    expect(bearerChallenge({ realm: undefined, scope: '' })).toBe('Bearer');
  });

  it('writes the parameters as quoted strings in the order given', () => {
    expect(
      bearerChallenge({
        resource_metadata: 'https://gw.example/.well-known/oauth-protected-resource/mcp',
        scope: 'read write',
        error: 'invalid_token',
      }),
    ).toBe(
      'Bearer resource_metadata="https://gw.example/.well-known/oauth-protected-resource/mcp", scope="read write", error="invalid_token"',
    );
    expect(bearerChallenge({ realm: 'mcp', error: 'insufficient_scope' })).toBe(
      'Bearer realm="mcp", error="insufficient_scope"',
    );
  });

  it('escapes a double quote and a backslash, so a value cannot end its string early', () => {
    expect(bearerChallenge({ realm: 'a", error="invalid_request', error_description: 'x\\' })).toBe(
      'Bearer realm="a\\", error=\\"invalid_request", error_description="x\\\\"',
    );
  });
});
