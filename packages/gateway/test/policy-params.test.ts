import { memoryThrottles, SchemaError } from '@mcp-identity/common';
import { describe, expect, it } from 'vitest';
import type { TokenVerifier } from '../src/auth/verifier.js';
import { POLICIES } from '../src/policies/index.js';
import type { PolicySetup } from '../src/policies/policy.js';

const setup: PolicySetup = {
  proxy: 'params-v1.0',
  keyManagers: [],
  verifier: {} as TokenVerifier,
  now: Date.now,
  throttles: memoryThrottles(),
};

describe('policy params', () => {
  it('are checked against the policy schema again when a policy is created', () => {
    const create = (name: string, params: Record<string, unknown>) => () =>
      POLICIES.get(name)?.create(params, setup);
    expect(create('mcp-authz', { tools: [{ name: 'x', scopes: 'read' }] })).toThrow(SchemaError);
    expect(create('mcp-ratelimit', { tools: [{ name: 'x', limits: [] }] })).toThrow(
      'mcp-ratelimit params is invalid:\n  /tools/0/limits: must NOT have fewer than 1 items',
    );
    expect(create('mcp-auth', { forwardToken: 'yes' })).toThrow(
      'mcp-auth params is invalid:\n  /forwardToken: must be boolean',
    );
  });

  it('that match the schema create the policy', () => {
    const policy = POLICIES.get('mcp-authz')?.create(
      { tools: [{ name: 'x', scopes: { anyOf: ['read'] } }] },
      setup,
    );
    expect(policy?.scopes).toEqual(['read']);
  });
});
