import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { SCIM_GATEWAY_RULES_FILE } from './locations.js';

/** One mcp-authz rule of workflows/scim/gateway-rules.yaml. */
export interface ToolRule {
  name: string;
  scopes: { allOf?: string[]; anyOf?: string[] };
}

let rules: ToolRule[] | undefined;

/** The rules, read once per process: `up` uses them twice and the file ships with the package. */
export function gatewayRules(): ToolRule[] {
  rules ??= (parseYaml(readFileSync(SCIM_GATEWAY_RULES_FILE, 'utf8')) as { tools: ToolRule[] })
    .tools;
  return rules;
}

/** The scopes the gateway's rule for a tool asks for (allOf: all; anyOf: the first). */
export function scopesForTool(tool: string): string[] {
  const rule = gatewayRules().find((candidate) => candidate.name === tool);
  if (!rule) return [];
  return rule.scopes.allOf ?? rule.scopes.anyOf?.slice(0, 1) ?? [];
}

/** Every scope a tool rule asks for, in order of first use. */
export function gatewayRuleScopes(): string[] {
  const scopes = gatewayRules().flatMap((rule) => [
    ...(rule.scopes.allOf ?? []),
    ...(rule.scopes.anyOf ?? []),
  ]);
  return [...new Set(scopes)];
}
