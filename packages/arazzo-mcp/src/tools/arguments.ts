import { Ajv, type ErrorObject } from 'ajv';
import type { WorkflowTool } from './shape.js';

export type ArgumentsResult =
  | {
      ok: true;
      /** Runner inputs keyed by Arazzo input name, object/array inputs parsed. */
      inputs: Record<string, unknown>;
      /** The same inputs as the client sent them (what the reference echoes back). */
      received: Record<string, unknown>;
    }
  | { ok: false; problems: string[] };

export type ArgumentReader = (args: Record<string, unknown> | undefined) => ArgumentsResult;

// One validator per tool, compiled at start-up; the schemas are ours, so strict mode stays on.
const ajv = new Ajv({ allErrors: true });

/**
 * Checks a tool call's arguments against the tool's input schema (no type coercion: a
 * mistyped argument is a schema error, as the MCP SDK's McpServer reports it), then maps them
 * to workflow inputs. Unknown arguments are ignored, as MCP SDK servers do.
 */
export function createArgumentReader(tool: WorkflowTool): ArgumentReader {
  const validate = ajv.compile(tool.inputSchema);
  return (args = {}) => {
    if (!validate(args)) return { ok: false, problems: (validate.errors ?? []).map(describeError) };
    const inputs: Record<string, unknown> = {};
    const received: Record<string, unknown> = {};
    const problems: string[] = [];
    for (const parameter of tool.parameters) {
      if (!(parameter.name in args)) continue;
      const value = args[parameter.name];
      received[parameter.inputName] = value;
      // The input schema types an object or array parameter as a string, which Ajv has checked.
      if (parameter.jsonKind === undefined || typeof value !== 'string') {
        inputs[parameter.inputName] = value;
        continue;
      }
      const parsed = parseJsonArgument(parameter.name, parameter.jsonKind, value);
      if (parsed.ok) inputs[parameter.inputName] = parsed.value;
      else problems.push(parsed.problem);
    }
    return problems.length > 0 ? { ok: false, problems } : { ok: true, inputs, received };
  };
}

function parseJsonArgument(
  name: string,
  kind: 'object' | 'array',
  text: string,
): { ok: true; value: unknown } | { ok: false; problem: string } {
  const expected = kind === 'object' ? 'a JSON object' : 'a JSON array';
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return {
      ok: false,
      problem: `argument '${name}' must be ${expected} encoded as a string, but it is not valid JSON (${(error as Error).message})`,
    };
  }
  const isArray = Array.isArray(value);
  const matches =
    kind === 'array' ? isArray : value !== null && typeof value === 'object' && !isArray;
  return matches
    ? { ok: true, value }
    : { ok: false, problem: `argument '${name}' must be ${expected} encoded as a string` };
}

function describeError(error: ErrorObject): string {
  if (error.keyword === 'required') {
    return `missing required argument '${(error.params as { missingProperty: string }).missingProperty}'`;
  }
  const argument = error.instancePath.slice(1).split('/')[0];
  return argument ? `argument '${argument}' ${error.message}` : `arguments ${error.message}`;
}
