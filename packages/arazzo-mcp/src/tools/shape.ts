import type { WorkflowSummary } from '@mcp-identity/arazzo';
import { isJsonObject, McpIdentityError } from '@mcp-identity/common';
import { cleanDocstring } from './docstring.js';
import { camelToSnake, TOOL_NAME_PATTERN, toParameterName } from './naming.js';

/**
 * How tools are shaped. Defaults reproduce the reference server (description from the summary,
 * every input required, no parameter descriptions); the package README, *Tools*, has the rules.
 */
export interface ToolShapeOptions {
  /** Mark only the inputs the workflow lists in `required` as required (default: all). */
  honorRequired?: boolean;
  /** Send each input's `description` with its parameter (default: no descriptions). */
  paramDescriptions?: boolean;
}

export type ParameterType = (typeof SCALAR_TYPES)[number];

export interface ToolParameter {
  /** The MCP argument name (see toParameterName). */
  readonly name: string;
  /** The Arazzo input the argument feeds. */
  readonly inputName: string;
  readonly type: ParameterType;
  /** Set when the input is an object or array sent as a JSON string. */
  readonly jsonKind?: 'object' | 'array';
  readonly required: boolean;
}

export interface JsonObjectSchema {
  type: 'object';
  properties: Record<string, Record<string, unknown>>;
  required?: string[];
  additionalProperties?: boolean;
  [key: string]: unknown;
}

export interface WorkflowTool {
  readonly name: string;
  readonly workflowId: string;
  readonly description: string;
  readonly parameters: readonly ToolParameter[];
  /** Declared workflow output names in document order. */
  readonly outputs: readonly string[];
  readonly inputSchema: JsonObjectSchema;
  readonly outputSchema: JsonObjectSchema;
}

/** Tools that cannot be served: invalid or colliding names. Start-up must fail on it. */
export class ToolShapeError extends McpIdentityError {
  readonly code = 'ERR_TOOL_SHAPE';

  constructor(readonly problems: string[]) {
    super(`Cannot build MCP tools:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

const SCALAR_TYPES = ['integer', 'number', 'string', 'boolean'] as const;

function isParameterType(type: string | undefined): type is ParameterType {
  return SCALAR_TYPES.some((scalar) => scalar === type);
}

/** One tool per workflow; throws ToolShapeError listing every naming problem at once. */
export function buildTools(
  workflows: readonly WorkflowSummary[],
  options: ToolShapeOptions = {},
): WorkflowTool[] {
  const problems: string[] = [];
  const owners = new Map<string, string>();
  const tools = workflows.map((workflow) => {
    const tool = buildTool(workflow, options, problems);
    if (!TOOL_NAME_PATTERN.test(tool.name)) {
      problems.push(
        `workflow '${workflow.workflowId}': tool name '${tool.name}' does not match ${TOOL_NAME_PATTERN.source}`,
      );
    }
    const owner = owners.get(tool.name);
    if (owner !== undefined) {
      problems.push(
        `workflows '${owner}' and '${workflow.workflowId}' both become tool '${tool.name}'`,
      );
    }
    owners.set(tool.name, workflow.workflowId);
    return tool;
  });
  if (problems.length > 0) throw new ToolShapeError(problems);
  return tools;
}

function buildTool(
  workflow: WorkflowSummary,
  options: ToolShapeOptions,
  problems: string[],
): WorkflowTool {
  const { workflowId } = workflow;
  const properties = asRecord(workflow.inputs?.properties);
  const requiredInputs = new Set(
    Array.isArray(workflow.inputs?.required) ? workflow.inputs.required : [],
  );
  const schemaProperties: Record<string, Record<string, unknown>> = {};
  const parameters: ToolParameter[] = [];
  for (const [inputName, rawSchema] of Object.entries(properties)) {
    const schema = asRecord(rawSchema);
    const declaredType = typeof schema.type === 'string' ? schema.type.toLowerCase() : undefined;
    const parameter: ToolParameter = {
      name: toParameterName(inputName),
      inputName,
      type: isParameterType(declaredType) ? declaredType : 'string',
      ...(declaredType === 'object' || declaredType === 'array' ? { jsonKind: declaredType } : {}),
      required: !options.honorRequired || requiredInputs.has(inputName),
    };
    const clash = parameters.find((other) => other.name === parameter.name);
    if (clash) {
      problems.push(
        `workflow '${workflowId}': inputs '${clash.inputName}' and '${inputName}' both become argument '${parameter.name}'`,
      );
      continue;
    }
    parameters.push(parameter);
    schemaProperties[parameter.name] = {
      type: parameter.type,
      ...(options.paramDescriptions && typeof schema.description === 'string'
        ? { description: schema.description }
        : {}),
    };
  }
  // The reference renders parameters as "name: type" and sorts those strings.
  const sortKey = (p: ToolParameter) => `${p.name}: ${pythonTypeName(p.type)}`;
  parameters.sort((a, b) => compareCodeUnits(sortKey(a), sortKey(b)));
  return {
    name: camelToSnake(workflowId),
    workflowId,
    description: describe(workflow),
    parameters,
    outputs: [...workflow.outputs],
    inputSchema: {
      type: 'object',
      properties: Object.fromEntries(parameters.map((p) => [p.name, schemaProperties[p.name]!])),
      ...requiredList(parameters),
    },
    outputSchema: {
      type: 'object',
      properties: Object.fromEntries(
        workflow.outputs.map((name) => [name, workflow.outputSchemas?.[name] ?? {}]),
      ),
      additionalProperties: false,
    },
  };
}

/** Like the reference's schemas, `required` is left out when nothing is required. */
function requiredList(parameters: readonly ToolParameter[]): { required?: string[] } {
  const required = parameters.filter((p) => p.required).map((p) => p.name);
  return required.length > 0 ? { required } : {};
}

function describe(workflow: WorkflowSummary): string {
  if (workflow.summary) return cleanDocstring(workflow.summary);
  if (workflow.description) return cleanDocstring(workflow.description);
  return `Execute the ${workflow.workflowId} workflow`;
}

function pythonTypeName(type: ParameterType): string {
  return { integer: 'int', number: 'float', string: 'str', boolean: 'bool' }[type];
}

function compareCodeUnits(a: string, b: string): number {
  if (a === b) return 0;
  return a < b ? -1 : 1;
}

function asRecord(value: unknown): Record<string, unknown> {
  return isJsonObject(value) ? value : {};
}
