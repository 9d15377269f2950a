/** The loaded, validated Arazzo document with its sources, and lookups shared by the
 * validator and the runner. */
import { InternalError } from '@mcp-identity/common';
import { parseExpression } from './expression.js';
import type { OpenApiSource, Operation } from './openapi.js';
import {
  type ActionObject,
  type ArazzoDocument,
  isReusable,
  type ParameterObject,
  type ReusableObject,
  type StepObject,
  type WorkflowObject,
} from './types.js';

export interface SourceEntry {
  name: string;
  /** url as written in the Arazzo document */
  url: string;
  type: 'openapi' | 'arazzo';
  /** absolute path or URL */
  location: string;
  openapi?: OpenApiSource;
}

export interface ArazzoModel {
  location: string;
  doc: ArazzoDocument;
  sources: Map<string, SourceEntry>;
  workflows: Map<string, WorkflowObject>;
  sourceServers: Record<string, string>;
}

/** A step's target or the reason it cannot be resolved. */
export type StepTarget =
  | { kind: 'operation'; operation: Operation }
  | { kind: 'workflow'; workflow: WorkflowObject }
  | { kind: 'unresolved'; problem: string; field: 'operationId' | 'operationPath' | 'workflowId' };

function openapiSources(model: ArazzoModel): OpenApiSource[] {
  return [...model.sources.values()].flatMap((entry) => (entry.openapi ? [entry.openapi] : []));
}

function qualified(text: string): { source: string; ref: string } | undefined {
  if (!text.startsWith('$sourceDescriptions.')) return undefined;
  const expr = parseExpression(text);
  return expr.kind === 'sourceDescriptions' ? { source: expr.name, ref: expr.ref } : undefined;
}

function resolveOperationId(model: ArazzoModel, operationId: string): StepTarget {
  const unresolved = (problem: string): StepTarget => ({
    kind: 'unresolved',
    problem,
    field: 'operationId',
  });
  let named: { source: string; ref: string } | undefined;
  try {
    named = qualified(operationId);
  } catch (error) {
    return unresolved((error as Error).message);
  }
  if (named) {
    const entry = model.sources.get(named.source);
    if (!entry) return unresolved(`no source description named "${named.source}"`);
    const operation = entry.openapi?.byOperationId.get(named.ref);
    if (!operation)
      return unresolved(`operationId "${named.ref}" not found in source "${named.source}"`);
    return { kind: 'operation', operation };
  }
  const matches = openapiSources(model).flatMap((source) => {
    const operation = source.byOperationId.get(operationId);
    return operation ? [operation] : [];
  });
  if (matches.length === 0)
    return unresolved(`operationId "${operationId}" not found in any source description`);
  if (matches.length > 1) {
    const names = matches.map((op) => op.source.name).join(', ');
    return unresolved(
      `operationId "${operationId}" is ambiguous (in ${names}); write $sourceDescriptions.<name>.${operationId}`,
    );
  }
  return { kind: 'operation', operation: matches[0]! };
}

function resolveOperationPath(model: ArazzoModel, operationPath: string): StepTarget {
  const unresolved = (problem: string): StepTarget => ({
    kind: 'unresolved',
    problem,
    field: 'operationPath',
  });
  const hash = operationPath.indexOf('#');
  if (hash === -1) return unresolved('operationPath must be "<source url>#<JSON pointer>"');
  const left = operationPath.slice(0, hash);
  const pointer = operationPath.slice(hash + 1);
  const bare = left.startsWith('{') && left.endsWith('}') ? left.slice(1, -1) : left;
  let entry: SourceEntry | undefined;
  if (bare.startsWith('$sourceDescriptions.')) {
    try {
      const expr = parseExpression(bare);
      if (expr.kind === 'sourceDescriptions' && expr.ref === 'url')
        entry = model.sources.get(expr.name);
      else return unresolved('expected {$sourceDescriptions.<name>.url}#<JSON pointer>');
    } catch (error) {
      return unresolved((error as Error).message);
    }
  } else {
    entry = [...model.sources.values()].find((s) => s.url === left || s.location === left);
  }
  if (!entry) return unresolved(`operationPath "${operationPath}" names no source description`);
  if (!entry.openapi)
    return unresolved(`source "${entry.name}" is not a loaded OpenAPI description`);
  const operation = entry.openapi.operationAt(pointer);
  if (!operation)
    return unresolved(
      `operationPath pointer "${pointer}" is not an operation in source "${entry.name}"`,
    );
  return { kind: 'operation', operation };
}

const targets = new WeakMap<StepObject, StepTarget>();

/** A step's target; memoised, since the document does not change once loaded. */
export function resolveStepTarget(model: ArazzoModel, step: StepObject): StepTarget {
  let target = targets.get(step);
  if (!target) {
    target = findStepTarget(model, step);
    targets.set(step, target);
  }
  return target;
}

function findStepTarget(model: ArazzoModel, step: StepObject): StepTarget {
  if (typeof step.operationId === 'string') return resolveOperationId(model, step.operationId);
  if (typeof step.operationPath === 'string')
    return resolveOperationPath(model, step.operationPath);
  const workflowId = String(step.workflowId);
  if (workflowId.startsWith('$sourceDescriptions.')) {
    return {
      kind: 'unresolved',
      field: 'workflowId',
      problem:
        'workflows of other Arazzo documents ($sourceDescriptions.<name>.<workflowId>) are not supported',
    };
  }
  const workflow = model.workflows.get(workflowId);
  if (!workflow)
    return {
      kind: 'unresolved',
      field: 'workflowId',
      problem: `workflow "${workflowId}" does not exist`,
    };
  return { kind: 'workflow', workflow };
}

const COMPONENT_REFERENCE = /^\$components\.(parameters|successActions|failureActions)\.(.+)$/;

/** A Reusable Object's component, or an error message. */
export function resolveReusable<T>(
  model: ArazzoModel,
  reusable: ReusableObject,
  kind: 'parameters' | 'successActions' | 'failureActions',
): T | string {
  const match = COMPONENT_REFERENCE.exec(reusable.reference);
  if (!match) return `reference "${reusable.reference}" must be $components.${kind}.<name>`;
  if (match[1] !== kind)
    return `reference "${reusable.reference}" must point at components.${kind}`;
  const component = model.doc.components?.[kind]?.[match[2]!];
  if (component === undefined) return `reference "${reusable.reference}" does not exist`;
  return component as T;
}

/** Parameter objects with references resolved (a reference's `value` overrides). */
export function resolveParameters(
  model: ArazzoModel,
  list: (ParameterObject | ReusableObject)[] | undefined,
): ParameterObject[] {
  return (list ?? []).map((item) => {
    if (!isReusable(item)) return item;
    const component = resolveReusable<ParameterObject>(model, item, 'parameters');
    if (typeof component === 'string') throw new InternalError(component);
    return 'value' in item ? { ...component, value: item.value } : component;
  });
}

/** Step actions first, then the workflow's defaults whose names the step did not override. */
export function effectiveActions(
  model: ArazzoModel,
  stepActions: (ActionObject | ReusableObject)[] | undefined,
  workflowActions: (ActionObject | ReusableObject)[] | undefined,
  kind: 'successActions' | 'failureActions',
): ActionObject[] {
  const resolve = (item: ActionObject | ReusableObject): ActionObject => {
    if (!isReusable(item)) return item;
    const component = resolveReusable<ActionObject>(model, item, kind);
    if (typeof component === 'string') throw new InternalError(component);
    return component;
  };
  const own = (stepActions ?? []).map(resolve);
  const names = new Set(own.map((action) => action.name));
  const defaults = (workflowActions ?? []).map(resolve).filter((action) => !names.has(action.name));
  return [...own, ...defaults];
}
