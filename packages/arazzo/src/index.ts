/**
 * @mcp-identity/arazzo — load, validate and execute Arazzo 1.0.1 workflows against OpenAPI
 * 3.0/3.1 operations. Knows nothing of MCP.
 */

import { InvalidArgumentError } from '@mcp-identity/common';
import type { JsonSchema } from './json-schema.js';
import { inputsSchema, type LoadOptions, loadModel } from './loader.js';
import { type ArazzoModel, resolveStepTarget } from './model.js';
import { workflowOutputSchemas } from './output-schemas.js';
import { type Runner, type RunnerOptions, WorkflowRunner } from './runner.js';
import { type SchemeCredentials, schemeEnvNames } from './security.js';

export { evaluateConditionNode, parseCondition } from './condition.js';
export { type ArazzoProblem, ArazzoValidationError, formatProblem } from './errors.js';
export {
  type ExpressionScope,
  evaluateValue,
  parseExpression,
  type RuntimeExpression,
} from './expression.js';
export type { Applied, FailureKind, RunFailure } from './failure.js';
export type { JsonSchema } from './json-schema.js';
export type { LoadOptions } from './loader.js';
export type {
  Runner,
  RunnerLogger,
  RunnerOptions,
  RunOptions,
  WorkflowResult,
} from './runner.js';
export {
  envBase,
  envPrefix,
  type OnBehalfOf,
  type SchemeCredentials,
  sanitizeEnvName,
} from './security.js';
export {
  decideTransition,
  type StepDecision,
  type StepOutcome,
  type Transition,
} from './transition.js';

export interface WorkflowSummary {
  workflowId: string;
  summary?: string;
  description?: string;
  /** the workflow's `inputs` JSON Schema (object schema), components $refs resolved; undefined if none */
  inputs?: Record<string, unknown>;
  /** names of the workflow's declared outputs ([] when it has none) */
  outputs: string[];
  /**
   * JSON Schema of each declared output, derived from the OpenAPI response schemas its
   * expression reads; every one accepts null; `{}` where the origin cannot be traced
   */
  outputSchemas?: Record<string, JsonSchema>;
}

export interface LoadedArazzo {
  /** path or URL of the Arazzo document */
  readonly location: string;
  /** in document order */
  readonly workflows: WorkflowSummary[];
  /** security schemes the workflows' operations use, with the environment variables they read */
  readonly credentials: SchemeCredentials[];
}

const models = new WeakMap<LoadedArazzo, ArazzoModel>();

function credentialsOf(model: ArazzoModel): SchemeCredentials[] {
  const found = new Map<string, SchemeCredentials>();
  for (const workflow of model.workflows.values()) {
    for (const step of workflow.steps) {
      const target = resolveStepTarget(model, step);
      if (target.kind !== 'operation') continue;
      const { operation } = target;
      const source = operation.source;
      for (const requirement of source.securityFor(operation)) {
        for (const name of Object.keys(requirement)) {
          const scheme = source.securityScheme(name);
          const key = `${source.name}\u0000${name}`;
          if (!scheme || found.has(key)) continue;
          found.set(key, {
            source: source.name,
            scheme: name,
            type: String(scheme.type),
            env: schemeEnvNames(source, name, scheme),
          });
        }
      }
    }
  }
  return [...found.values()];
}

/** Loads + validates (JSON Schema + semantic checks); throws ArazzoValidationError listing every problem. */
export async function loadArazzo(location: string, options?: LoadOptions): Promise<LoadedArazzo> {
  const model = await loadModel(location, options);
  const loaded: LoadedArazzo = {
    location: model.location,
    workflows: model.doc.workflows.map((workflow) => ({
      workflowId: workflow.workflowId,
      ...(workflow.summary !== undefined && { summary: workflow.summary }),
      ...(workflow.description !== undefined && { description: workflow.description }),
      ...(workflow.inputs !== undefined && { inputs: inputsSchema(model, workflow) }),
      outputs: Object.keys(workflow.outputs ?? {}),
      outputSchemas: workflowOutputSchemas(model, workflow),
    })),
    credentials: credentialsOf(model),
  };
  models.set(loaded, model);
  return loaded;
}

/** A runner for a loaded document; runs are independent and may be concurrent. */
export function createRunner(loaded: LoadedArazzo, options?: RunnerOptions): Runner {
  const model = models.get(loaded);
  if (!model)
    throw new InvalidArgumentError('createRunner needs the object returned by loadArazzo');
  return new WorkflowRunner(model, options);
}
