/**
 * The JSON Schema of each workflow output, traced through the runtime expressions that
 * produce it down to the OpenAPI response schemas they read (`$response.body#/…`), so that
 * an output's consumers (MCP clients, models) see its real type.
 */
import { parseExpression, type RuntimeExpression } from './expression.js';
import { parsePointer } from './json-pointer.js';
import { type JsonSchema, nullable, schemasAt, toJsonSchema, union } from './json-schema.js';
import { inputsSchema } from './loader.js';
import { type ArazzoModel, resolveStepTarget } from './model.js';
import type { StepObject, WorkflowObject } from './types.js';

/** Expressions may lead through other outputs and workflows; deeper chains are not traced. */
const MAX_DEPTH = 8;

/** `application/json`, `application/scim+json`, … with or without parameters. */
const JSON_MEDIA_TYPE = /^[^/\s]+\/([^;\s]*\+)?json\s*(;|$)/i;

interface Trace {
  model: ArazzoModel;
  workflow: WorkflowObject;
  /** The step whose outputs are being evaluated (absent for workflow outputs). */
  step?: StepObject;
  depth: number;
}

/**
 * The schema of every declared output of a workflow. Each accepts `null`, which is what the
 * runner yields for an output that does not resolve (a member the response lacks, a step
 * that did not run). An output whose origin cannot be traced gets the permissive `{}`.
 */
export function workflowOutputSchemas(
  model: ArazzoModel,
  workflow: WorkflowObject,
): Record<string, JsonSchema> {
  return Object.fromEntries(
    Object.entries(workflow.outputs ?? {}).map(([name, expression]) => [
      name,
      nullable(schemaOf(expression, { model, workflow, depth: 0 })),
    ]),
  );
}

function schemaOf(text: unknown, trace: Trace): JsonSchema {
  if (typeof text !== 'string' || trace.depth > MAX_DEPTH) return {};
  let expression: RuntimeExpression;
  try {
    expression = parseExpression(text);
  } catch {
    return {};
  }
  const deeper = { ...trace, depth: trace.depth + 1 };
  switch (expression.kind) {
    case 'statusCode':
      return { type: 'integer' };
    case 'url':
    case 'method':
      return { type: 'string' };
    case 'request':
    case 'response':
      if (expression.part === 'header') return { type: 'string' };
      if (expression.kind === 'response' && expression.part === 'body') {
        return responseBodySchema(trace, expression.pointer);
      }
      return {};
    case 'inputs':
      return within(inputSchema(trace.model, trace.workflow, expression.name), expression.pointer);
    case 'outputs': {
      // In the outputs of a step that runs a workflow, `$outputs` are that workflow's.
      const target = trace.step && resolveStepTarget(trace.model, trace.step);
      const workflow = target?.kind === 'workflow' ? target.workflow : trace.workflow;
      return within(
        schemaOf(workflow.outputs?.[expression.name], { ...deeper, workflow, step: undefined }),
        expression.pointer,
      );
    }
    case 'steps': {
      const step = trace.workflow.steps.find((s) => s.stepId === expression.stepId);
      if (!step) return {};
      return within(
        schemaOf(step.outputs?.[expression.name], { ...deeper, step }),
        expression.pointer,
      );
    }
    case 'workflows': {
      const workflow = trace.model.workflows.get(expression.workflowId);
      if (!workflow) return {};
      const schema =
        expression.field === 'inputs'
          ? inputSchema(trace.model, workflow, expression.name)
          : schemaOf(workflow.outputs?.[expression.name], { ...deeper, workflow, step: undefined });
      return within(schema, expression.pointer);
    }
    default:
      return {};
  }
}

function within(schema: JsonSchema, pointer: string | undefined): JsonSchema {
  return pointer ? union(schemasAt(schema, parsePointer(pointer))) : schema;
}

function inputSchema(model: ArazzoModel, workflow: WorkflowObject, name: string): JsonSchema {
  const properties = inputsSchema(model, workflow)?.properties;
  const schema = (properties as Record<string, unknown> | undefined)?.[name];
  return schema !== null && typeof schema === 'object' ? (schema as JsonSchema) : {};
}

/**
 * What `$response.body#<pointer>` can be: the union over every JSON response the operation
 * declares (outputs are evaluated after a failed step too). In a workflow's own outputs
 * `$response` is the last step that ran, so every step of the workflow counts.
 */
function responseBodySchema(trace: Trace, pointer: string): JsonSchema {
  const tokens = parsePointer(pointer);
  const found: JsonSchema[] = [];
  for (const step of trace.step ? [trace.step] : trace.workflow.steps) {
    const target = resolveStepTarget(trace.model, step);
    if (target.kind !== 'operation') return {};
    const { source, operation } = target.operation;
    const responses = source.deref(operation.responses);
    if (responses === null || typeof responses !== 'object') return {};
    for (const response of Object.values(responses)) {
      const content = (source.deref(response) as { content?: unknown } | undefined)?.content;
      if (content === null || typeof content !== 'object') continue;
      for (const [mediaType, media] of Object.entries(content)) {
        if (!JSON_MEDIA_TYPE.test(mediaType)) continue;
        const schema = toJsonSchema(source, (media as { schema?: unknown } | null)?.schema);
        found.push(...schemasAt(schema, tokens));
      }
    }
  }
  return union(found);
}
