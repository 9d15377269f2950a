import { compileSchema } from '@mcp-identity/common';
import type { Static, TSchema } from '@sinclair/typebox';
import type { Policy, PolicyFactory, PolicySetup } from './policy.js';

/**
 * A policy kind whose params are typed by their schema (`Static`). The definition was validated
 * before it was stored; creation parses the params again so the policy never sees another shape.
 */
export function definePolicy<S extends TSchema>(policy: {
  name: string;
  /** JSON Schema of the params of v1, the only major version so far. */
  versions: { v1: S };
  phase: number;
  create(params: Static<S>, setup: PolicySetup): Policy;
  check?: PolicyFactory['check'];
}): PolicyFactory {
  const params = compileSchema(policy.versions.v1);
  return {
    name: policy.name,
    versions: policy.versions,
    phase: policy.phase,
    create: (raw, setup) => policy.create(params.parse(raw, `${policy.name} params`), setup),
    ...(policy.check ? { check: policy.check } : {}),
  };
}
