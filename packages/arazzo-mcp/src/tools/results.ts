import type { RunFailure, WorkflowResult } from '@mcp-identity/arazzo';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { pythonDictRepr, pythonStrRepr } from './python-repr.js';
import type { WorkflowTool } from './shape.js';

/**
 * How results are reported. Defaults reproduce the reference server where its behaviour is
 * sound (a Python dict as text, `isError: false` for a workflow an HTTP 4xx stopped: the spec's
 * §2.11 rule 5); every other failure is a tool error. The package README, *Results*, shows
 * each case.
 */
export interface ResultOptions {
  /** `python` (default): outputs as a Python dict repr; `json`: the text is the outputs' JSON. */
  resultFormat?: 'python' | 'json';
  /**
   * Report a workflow that stopped on a failed step (an HTTP 4xx, say) with `isError: true`.
   * Default false: the model reads `error` from the outputs. (A failure without an answer to
   * rely on is a tool error either way.)
   */
  httpErrorsAsToolErrors?: boolean;
}

/**
 * The MCP result of one workflow run. The text of a completed run is what the reference
 * prints, and its outputs are also sent as `structuredContent`, matching the tool's
 * outputSchema. A run that failed without an answer to rely on (the API or its token endpoint
 * unreachable, a timeout, a 5xx, an unreadable answer) is a tool error saying what failed and
 * whether the operation may have been applied: the reference printed it as a success.
 */
export function toCallToolResult(
  tool: WorkflowTool,
  result: WorkflowResult,
  received: Record<string, unknown>,
  options: ResultOptions = {},
): CallToolResult {
  if (result.kind === 'error') {
    return finish(`Workflow Error: ${result.message}\n${failureLine(result.failure)}`, {}, true);
  }
  const entries = tool.outputs.map((name) => [name, result.outputs[name] ?? null] as const);
  const outputs = Object.fromEntries(entries);
  const isError = options.httpErrorsAsToolErrors === true && result.failedStep !== undefined;
  if (options.resultFormat === 'json') return finish(JSON.stringify(outputs), outputs, isError);
  const text =
    entries.length > 0
      ? `Workflow Success. Outputs: ${pythonDictRepr(entries)}`
      : `Workflow Result: ${executionResultRepr(tool, result, received)}`;
  return finish(text, outputs, isError);
}

/** An invalid call (missing, mistyped or unparsable argument): a tool error, as SDK servers send. */
export function invalidArgumentsResult(tool: WorkflowTool, problems: string[]): CallToolResult {
  return {
    content: [
      {
        type: 'text',
        text: `MCP error -32602: Input validation error: Invalid arguments for tool ${tool.name}: ${problems.join('; ')}`,
      },
    ],
    isError: true,
  };
}

/**
 * What a failure means for the caller, on a line of its own with a fixed grammar
 * (`Failure: <kind>. Applied: <no|yes|unknown> — <advice>`) that clients and the soak
 * benchmark read; the README's *Results* documents it.
 */
function failureLine({ kind, applied, retrySafe }: RunFailure): string {
  return `Failure: ${kind}. Applied: ${applied} — ${ADVICE[applied](retrySafe)}`;
}

const ADVICE: Record<RunFailure['applied'], (retrySafe: boolean) => string> = {
  no: () => 'nothing was changed; retrying is safe.',
  yes: () => 'the API accepted a change before the failure; check before retrying.',
  unknown: (retrySafe) =>
    retrySafe
      ? 'the request may have been carried out; it is idempotent, so retrying is safe.'
      : 'check before retrying.',
};

function finish(text: string, outputs: Record<string, unknown>, isError: boolean): CallToolResult {
  return {
    content: [{ type: 'text', text }],
    // A tool error carries no structured content (clients only validate successful results).
    ...(isError ? {} : { structuredContent: outputs }),
    isError,
  };
}

/**
 * The reference prints its `WorkflowExecutionResult` dataclass when a workflow declares no
 * outputs. Our runner does not report per-step outputs, so that field is left out.
 */
function executionResultRepr(
  tool: WorkflowTool,
  result: Extract<WorkflowResult, { kind: 'completed' }>,
  received: Record<string, unknown>,
): string {
  const failed = result.failedStep;
  const status = failed ? 'error' : 'workflow_complete';
  const error = failed
    ? pythonStrRepr(
        `Step ${failed.stepId} failed its success criteria${failed.statusCode === undefined ? '' : ` (HTTP ${failed.statusCode})`}`,
      )
    : 'None';
  // The reference builds the inputs dict from a literal sorted by `"<input name>": <argument>`.
  const inputs = tool.parameters
    .filter((p) => p.inputName in received)
    .map(
      (p) =>
        [p.inputName, received[p.inputName], `${JSON.stringify(p.inputName)}: ${p.name}`] as const,
    )
    .sort((a, b) => (a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0))
    .map(([name, value]) => [name, value] as const);
  return `WorkflowExecutionResult(status=${status}, workflow_id=${pythonStrRepr(tool.workflowId)}, outputs={}, inputs=${pythonDictRepr(inputs)}, error=${error})`;
}
