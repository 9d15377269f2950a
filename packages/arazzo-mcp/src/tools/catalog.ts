import type { RunOptions, WorkflowResult, WorkflowSummary } from '@mcp-identity/arazzo';
import {
  type AuthInfo,
  type CallToolResult,
  ProtocolError,
  ProtocolErrorCode,
  type Tool,
} from '@modelcontextprotocol/server';
import { type ArgumentReader, createArgumentReader } from './arguments.js';
import { invalidArgumentsResult, type ResultOptions, toCallToolResult } from './results.js';
import { buildTools, type ToolShapeOptions, type WorkflowTool } from './shape.js';

/** What the tools need from the Arazzo executor (its Runner satisfies it). */
export interface WorkflowRunner {
  run(
    workflowId: string,
    inputs: Record<string, unknown>,
    options?: RunOptions,
  ): Promise<WorkflowResult>;
}

export interface CatalogLogger {
  warn(obj: object, msg?: string): void;
}

export interface ToolCatalogOptions extends ToolShapeOptions, ResultOptions {
  logger?: CatalogLogger;
  /**
   * Delegated calls: every call runs on behalf of its caller, whose verified token (the
   * request's AuthInfo) the workflow's token requests exchange (RFC 8693).
   */
  delegation?: Delegation;
}

export interface Delegation {
  /** The exchanged tokens' `resource`; default each API's server URL. */
  resource?: string;
}

/** The MCP tools of one Arazzo document, independent of any transport. */
export interface ToolCatalog {
  readonly tools: readonly WorkflowTool[];
  /** The `tools/list` entries. */
  list(): Tool[];
  /**
   * Runs one `tools/call`. Never rejects for a workflow failure (that is a result);
   * rejects with a ProtocolError (-32602) only for an unknown tool.
   */
  call(
    name: string,
    args: Record<string, unknown> | undefined,
    auth?: AuthInfo,
  ): Promise<CallToolResult>;
}

const NO_CALLER_TOKEN: WorkflowResult = {
  kind: 'error',
  message: 'delegated call without a caller token to exchange',
  failure: { kind: 'token', applied: 'no', retrySafe: true },
};

/** Builds the tools (throws ToolShapeError for invalid or colliding names). */
export function createToolCatalog(
  workflows: readonly WorkflowSummary[],
  runner: WorkflowRunner,
  options: ToolCatalogOptions = {},
): ToolCatalog {
  const tools = buildTools(workflows, options);
  const byName = new Map<string, { tool: WorkflowTool; read: ArgumentReader }>(
    tools.map((tool) => [tool.name, { tool, read: createArgumentReader(tool) }]),
  );
  const listing: Tool[] = tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    // Built from the JSON (or YAML) documents, so they hold JSON values only, which the SDK's
    // type spells out member by member.
    inputSchema: tool.inputSchema as Tool['inputSchema'],
    outputSchema: tool.outputSchema as Tool['outputSchema'],
  }));

  const { delegation } = options;
  return {
    tools,
    list: () => listing,
    async call(name, args, auth) {
      const entry = byName.get(name);
      if (!entry)
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Tool ${name} not found`);
      const { tool, read } = entry;
      const checked = read(args);
      if (!checked.ok) return invalidArgumentsResult(tool, checked.problems);
      const callerToken = auth?.token;
      if (delegation && !callerToken) {
        // The HTTP guard lets no delegated call through without a verified token; should one
        // arrive anyway, it runs as nobody rather than with the server's own credentials.
        return toCallToolResult(tool, NO_CALLER_TOKEN, checked.received, options);
      }
      const run: RunOptions | undefined =
        delegation && callerToken
          ? { onBehalfOf: { subjectToken: callerToken, resource: delegation.resource } }
          : undefined;
      let result: WorkflowResult;
      try {
        result = await runner.run(tool.workflowId, checked.inputs, run);
      } catch (error) {
        // The executor reports failures as results; an exception here is unexpected, yet the
        // client still gets a `Workflow Error` rather than a broken call. Nothing says how far
        // the run got, so its outcome is unknown.
        options.logger?.warn({ err: error, tool: tool.name }, 'workflow run threw');
        result = {
          kind: 'error',
          message: (error as Error)?.message ?? String(error),
          failure: { kind: 'workflow', applied: 'unknown', retrySafe: false },
        };
      }
      return toCallToolResult(tool, result, checked.received, options);
    },
  };
}
