/** Semantic checks the JSON Schema cannot express. Every problem is collected; none throws. */
import { query as jsonPathQuery } from 'jsonpath-rfc9535';
import { conditionExpressions, parseCondition } from './condition.js';
import type { ArazzoProblem } from './errors.js';
import {
  collectExpressions,
  parseExpression,
  parseTemplate,
  type RuntimeExpression,
} from './expression.js';
import { joinPointer } from './json-pointer.js';
import { type ArazzoModel, resolveReusable, resolveStepTarget } from './model.js';
import type { Operation } from './openapi.js';
import { schemeEnvNames } from './security.js';
import {
  type ActionObject,
  type CriterionObject,
  isReusable,
  type ParameterObject,
  type ReusableObject,
  type StepObject,
  type WorkflowObject,
} from './types.js';

type Report = (pointer: string, message: string) => void;

/** A runtime expression found in the document, and where. */
interface Found {
  expr: RuntimeExpression;
  at: string;
}

function criterionType(criterion: CriterionObject): string {
  const type = criterion.type;
  if (type === undefined) return 'simple';
  return typeof type === 'string' ? type : type.type;
}

function checkCriterion(
  criterion: CriterionObject,
  at: string,
  report: Report,
  found: Found[],
): void {
  if (!criterion || typeof criterion.condition !== 'string') return;
  const type = criterionType(criterion);
  if (typeof criterion.context === 'string') {
    try {
      found.push({ expr: parseExpression(criterion.context), at: `${at}/context` });
    } catch (error) {
      report(`${at}/context`, (error as Error).message);
    }
  }
  try {
    if (type === 'simple') {
      for (const expr of conditionExpressions(parseCondition(criterion.condition))) {
        found.push({ expr, at: `${at}/condition` });
      }
      return;
    }
    if (type === 'xpath') {
      report(`${at}/type`, 'xpath criteria are not supported');
      return;
    }
    const parts = parseTemplate(criterion.condition);
    const embedded = parts.filter((part): part is RuntimeExpression => typeof part !== 'string');
    found.push(...embedded.map((expr) => ({ expr, at: `${at}/condition` })));
    if (embedded.length > 0) return; // the text is only complete at run time
    if (type === 'regex') new RegExp(criterion.condition);
    else if (type === 'jsonpath') jsonPathQuery({}, criterion.condition);
  } catch (error) {
    report(`${at}/condition`, `invalid ${type} condition: ${(error as Error).message}`);
  }
}

interface Context {
  model: ArazzoModel;
  report: Report;
}

function checkActions(
  ctx: Context,
  list: (ActionObject | ReusableObject)[] | undefined,
  kind: 'successActions' | 'failureActions',
  at: string,
  workflow: WorkflowObject,
  found: Found[],
): void {
  if (!Array.isArray(list)) return;
  list.forEach((item, i) => {
    const pointer = `${at}/${i}`;
    let action: ActionObject | string = item as ActionObject;
    if (isReusable(item)) action = resolveReusable<ActionObject>(ctx.model, item, kind);
    if (typeof action === 'string') {
      ctx.report(`${pointer}/reference`, action);
      return;
    }
    checkActionTargets(ctx, action, pointer, workflow);
    (action.criteria ?? []).forEach((criterion, j) => {
      checkCriterion(criterion, `${pointer}/criteria/${j}`, ctx.report, found);
    });
  });
}

function checkActionTargets(
  ctx: Context,
  action: ActionObject,
  at: string,
  workflow: WorkflowObject,
): void {
  if (
    typeof action.stepId === 'string' &&
    !workflow.steps?.some((s) => s?.stepId === action.stepId)
  ) {
    ctx.report(
      `${at}/stepId`,
      `step "${action.stepId}" does not exist in workflow "${workflow.workflowId}"`,
    );
  }
  if (typeof action.workflowId === 'string') {
    if (action.workflowId.startsWith('$sourceDescriptions.')) {
      ctx.report(`${at}/workflowId`, 'workflows of other Arazzo documents are not supported');
    } else if (!ctx.model.workflows.has(action.workflowId)) {
      ctx.report(`${at}/workflowId`, `workflow "${action.workflowId}" does not exist`);
    }
  }
}

function checkParameters(
  ctx: Context,
  list: (ParameterObject | ReusableObject)[] | undefined,
  at: string,
  needIn: boolean,
  found: Found[],
): void {
  if (!Array.isArray(list)) return;
  const seen = new Set<string>();
  list.forEach((item, i) => {
    const pointer = `${at}/${i}`;
    let parameter: ParameterObject | string = item as ParameterObject;
    if (isReusable(item)) {
      parameter = resolveReusable<ParameterObject>(ctx.model, item, 'parameters');
      if (typeof parameter === 'string') {
        ctx.report(`${pointer}/reference`, parameter);
        return;
      }
      if ('value' in item) parameter = { ...parameter, value: item.value };
    }
    if (needIn && parameter.in === undefined) {
      ctx.report(
        pointer,
        `parameter "${parameter.name}" needs "in" (path, query, header or cookie)`,
      );
    }
    const key = `${parameter.in ?? ''}\u0000${parameter.in === 'header' ? parameter.name.toLowerCase() : parameter.name}`;
    if (seen.has(key))
      ctx.report(
        pointer,
        `parameter "${parameter.name}" (in ${parameter.in ?? 'inputs'}) is listed twice`,
      );
    seen.add(key);
    collect(parameter.value, `${pointer}/value`, ctx.report, found);
  });
}

function collect(value: unknown, at: string, report: Report, found: Found[]): void {
  try {
    for (const expr of collectExpressions(value)) found.push({ expr, at });
  } catch (error) {
    report(at, (error as Error).message);
  }
}

/** The operation step's server URL is usable and its security schemes are defined and supported. */
function checkOperation(ctx: ContextWithProblems, step: StepObject, at: string): void {
  const target = resolveStepTarget(ctx.model, step);
  if (target.kind !== 'operation') return;
  const { operation } = target;
  const source = operation.source;
  const report = (pointer: string, message: string) =>
    ctx.problems.push({ file: source.location, pointer, message });
  const serverProblem = ctx.model.sourceServers[source.name]
    ? undefined
    : serverUrlProblem(operation);
  if (serverProblem && !ctx.reportedServers.has(source.name)) {
    ctx.reportedServers.add(source.name);
    ctx.report(at, serverProblem);
  }
  source.securityFor(operation).forEach((requirement) => {
    for (const name of Object.keys(requirement)) {
      const scheme = source.securityScheme(name);
      if (!scheme) {
        report(
          `${operation.pointer}/security`,
          `security scheme "${name}" is not defined in components.securitySchemes`,
        );
      } else if (schemeEnvNames(source, name, scheme).length === 0) {
        report(
          joinPointer('components', 'securitySchemes', name),
          `security scheme type "${String(scheme.type)}" is not supported`,
        );
      }
    }
  });
}

interface ContextWithProblems extends Context {
  problems: ArazzoProblem[];
  /** sources whose server URL problem was already reported */
  reportedServers: Set<string>;
}

/** Why an operation's server URL cannot be used, if it cannot. */
function serverUrlProblem(operation: Operation): string | undefined {
  const source = operation.source;
  const server = operation.servers[0] as
    | { url?: unknown; variables?: Record<string, { default?: unknown }> }
    | undefined;
  if (!server || typeof server.url !== 'string') {
    return `source "${source.name}" declares no server URL; add one or override it with sourceServers`;
  }
  const url = server.url.replace(/\{([^}]+)\}/g, (whole, name: string) => {
    const fallback = server.variables?.[name]?.default;
    return fallback === undefined ? whole : String(fallback);
  });
  if (/^https?:\/\//i.test(url) || /^https?:\/\//i.test(source.location)) return undefined;
  return `server URL "${server.url}" of source "${source.name}" is not an absolute http(s) URL; make it absolute or override it with sourceServers`;
}

function checkReferences(ctx: Context, workflow: WorkflowObject, found: Found[]): void {
  const steps = new Map((workflow.steps ?? []).map((s) => [s?.stepId, s]));
  const inputNames = declaredInputs(ctx.model, workflow);
  for (const { expr, at } of found) {
    switch (expr.kind) {
      case 'steps': {
        const step = steps.get(expr.stepId);
        if (!step)
          ctx.report(
            at,
            `${expr.source}: step "${expr.stepId}" does not exist in workflow "${workflow.workflowId}"`,
          );
        else if (!outputDeclared(step.outputs, expr.name))
          ctx.report(at, `${expr.source}: step "${expr.stepId}" has no output "${expr.name}"`);
        break;
      }
      case 'workflows': {
        const target = ctx.model.workflows.get(expr.workflowId);
        if (!target) ctx.report(at, `${expr.source}: workflow "${expr.workflowId}" does not exist`);
        else if (expr.field === 'outputs' && !outputDeclared(target.outputs, expr.name)) {
          ctx.report(
            at,
            `${expr.source}: workflow "${expr.workflowId}" has no output "${expr.name}"`,
          );
        }
        break;
      }
      case 'inputs':
        if (
          inputNames &&
          !inputNames.has(expr.name.split(/[.[]/)[0]!) &&
          !inputNames.has(expr.name)
        ) {
          ctx.report(
            at,
            `${expr.source}: workflow "${workflow.workflowId}" declares no input "${expr.name}"`,
          );
        }
        break;
      case 'sourceDescriptions':
        if (!ctx.model.sources.has(expr.name))
          ctx.report(at, `${expr.source}: no source description named "${expr.name}"`);
        break;
      case 'components':
        if (
          (ctx.model.doc.components?.[expr.component] as Record<string, unknown> | undefined)?.[
            expr.name
          ] === undefined
        ) {
          ctx.report(at, `${expr.source}: component does not exist`);
        }
        break;
    }
  }
}

function outputDeclared(outputs: Record<string, string> | undefined, name: string): boolean {
  if (!outputs) return false;
  return Object.hasOwn(outputs, name) || Object.hasOwn(outputs, name.split(/[.[]/)[0]!);
}

/** Names of a workflow's declared inputs, or undefined when they cannot be known statically. */
export function declaredInputs(
  model: ArazzoModel,
  workflow: WorkflowObject,
): Set<string> | undefined {
  const schema = resolveLocalRefs(model, workflow.inputs) as Record<string, unknown> | undefined;
  if (!schema || typeof schema !== 'object') return undefined;
  const properties = schema.properties;
  if (!properties || typeof properties !== 'object') return undefined;
  if (schema.additionalProperties !== undefined && schema.additionalProperties !== false)
    return undefined;
  return new Set(Object.keys(properties));
}

/** Replaces local `$ref`s (e.g. "#/components/inputs/x") with the referenced schema. */
export function resolveLocalRefs(model: ArazzoModel, node: unknown, depth = 0): unknown {
  if (depth > 32) return node;
  if (Array.isArray(node)) return node.map((item) => resolveLocalRefs(model, item, depth + 1));
  if (node === null || typeof node !== 'object') return node;
  const object = node as Record<string, unknown>;
  if (typeof object.$ref === 'string' && object.$ref.startsWith('#/')) {
    const target = refTarget(model, object.$ref);
    if (target !== undefined) {
      const { $ref: _ref, ...rest } = object;
      const resolved = resolveLocalRefs(model, target, depth + 1);
      return Object.keys(rest).length > 0 && resolved && typeof resolved === 'object'
        ? { ...(resolved as object), ...(resolveLocalRefs(model, rest, depth + 1) as object) }
        : resolved;
    }
  }
  return Object.fromEntries(
    Object.entries(object).map(([k, v]) => [k, resolveLocalRefs(model, v, depth + 1)]),
  );
}

function refTarget(model: ArazzoModel, ref: string): unknown {
  const tokens = ref
    .slice(2)
    .split('/')
    .map((t) => decodeURIComponent(t).replace(/~1/g, '/').replace(/~0/g, '~'));
  let current: unknown = model.doc;
  for (const token of tokens) {
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, token))
      return undefined;
    current = (current as Record<string, unknown>)[token];
  }
  return current;
}

function checkInputRefs(ctx: Context, node: unknown, at: string): void {
  if (Array.isArray(node)) {
    node.forEach((item, i) => {
      checkInputRefs(ctx, item, `${at}/${i}`);
    });
  } else if (node !== null && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') {
        if (!value.startsWith('#/'))
          ctx.report(`${at}/$ref`, `only local references are supported, not "${value}"`);
        else if (refTarget(ctx.model, value) === undefined)
          ctx.report(`${at}/$ref`, `"${value}" does not exist`);
      } else checkInputRefs(ctx, value, `${at}${joinPointer(key)}`);
    }
  }
}

function checkStep(
  ctx: ContextWithProblems,
  workflow: WorkflowObject,
  step: StepObject,
  at: string,
  found: Found[],
): void {
  const target = resolveStepTarget(ctx.model, step);
  if (target.kind === 'unresolved') ctx.report(`${at}/${target.field}`, target.problem);
  else if (target.kind === 'operation') checkOperation(ctx, step, at);

  checkParameters(ctx, step.parameters, `${at}/parameters`, target.kind === 'operation', found);

  const body = step.requestBody;
  if (body && typeof body === 'object') {
    if (target.kind === 'workflow')
      ctx.report(`${at}/requestBody`, 'a step that runs a workflow cannot have a requestBody');
    collect(body.payload, `${at}/requestBody/payload`, ctx.report, found);
    (body.replacements ?? []).forEach((replacement, i) => {
      const pointer = `${at}/requestBody/replacements/${i}`;
      if (
        typeof replacement?.target === 'string' &&
        replacement.target !== '' &&
        !replacement.target.startsWith('/')
      ) {
        ctx.report(`${pointer}/target`, 'only JSON Pointer targets are supported (XPath is not)');
      }
      collect(replacement?.value, `${pointer}/value`, ctx.report, found);
    });
  }
  (step.successCriteria ?? []).forEach((criterion, i) => {
    checkCriterion(criterion, `${at}/successCriteria/${i}`, ctx.report, found);
  });
  checkActions(ctx, step.onSuccess, 'successActions', `${at}/onSuccess`, workflow, found);
  checkActions(ctx, step.onFailure, 'failureActions', `${at}/onFailure`, workflow, found);
  for (const [name, value] of Object.entries(step.outputs ?? {})) {
    const pointer = `${at}/outputs${joinPointer(name)}`;
    try {
      found.push({ expr: parseExpression(value), at: pointer });
    } catch (error) {
      ctx.report(pointer, (error as Error).message);
    }
  }
}

function checkDependencyCycles(ctx: Context): void {
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (id: string, path: string[]): void => {
    if (state.get(id) === 'done') return;
    if (state.get(id) === 'visiting') {
      const index = ctx.model.doc.workflows.findIndex((w) => w?.workflowId === path[0]);
      ctx.report(
        `/workflows/${index}/dependsOn`,
        `dependsOn forms a cycle: ${[...path.slice(path.indexOf(id)), id].join(' -> ')}`,
      );
      return;
    }
    state.set(id, 'visiting');
    for (const dependency of ctx.model.workflows.get(id)?.dependsOn ?? []) {
      if (ctx.model.workflows.has(dependency)) visit(dependency, [...path, id]);
    }
    state.set(id, 'done');
  };
  for (const id of ctx.model.workflows.keys()) visit(id, []);
}

export function semanticProblems(model: ArazzoModel): ArazzoProblem[] {
  const problems: ArazzoProblem[] = [];
  const report: Report = (pointer, message) =>
    problems.push({ file: model.location, pointer, message });
  const ctx: ContextWithProblems = { model, report, problems, reportedServers: new Set() };
  const doc = model.doc;

  const names = new Set<string>();
  (doc.sourceDescriptions ?? []).forEach((source, i) => {
    if (names.has(source?.name))
      report(
        `/sourceDescriptions/${i}/name`,
        `source description name "${source.name}" is used twice`,
      );
    names.add(source?.name);
    if (source?.type === 'arazzo')
      report(
        `/sourceDescriptions/${i}/type`,
        'sourceDescriptions of type arazzo are not supported',
      );
  });
  for (const name of Object.keys(model.sourceServers)) {
    if (!model.sources.has(name))
      report(
        '/sourceDescriptions',
        `sourceServers names "${name}", which is not a source description`,
      );
  }

  const workflowIds = new Set<string>();
  (Array.isArray(doc.workflows) ? doc.workflows : []).forEach((workflow, w) => {
    if (!workflow || typeof workflow !== 'object') return;
    const at = `/workflows/${w}`;
    if (workflowIds.has(workflow.workflowId))
      report(`${at}/workflowId`, `workflowId "${workflow.workflowId}" is used twice`);
    workflowIds.add(workflow.workflowId);
    checkInputRefs(ctx, workflow.inputs, `${at}/inputs`);
    (workflow.dependsOn ?? []).forEach((id, i) => {
      if (id.startsWith('$sourceDescriptions.'))
        report(`${at}/dependsOn/${i}`, 'workflows of other Arazzo documents are not supported');
      else if (!model.workflows.has(id))
        report(`${at}/dependsOn/${i}`, `workflow "${id}" does not exist`);
    });
    const found: Found[] = [];
    checkParameters(ctx, workflow.parameters, `${at}/parameters`, true, found);
    checkActions(
      ctx,
      workflow.successActions,
      'successActions',
      `${at}/successActions`,
      workflow,
      found,
    );
    checkActions(
      ctx,
      workflow.failureActions,
      'failureActions',
      `${at}/failureActions`,
      workflow,
      found,
    );
    const stepIds = new Set<string>();
    (Array.isArray(workflow.steps) ? workflow.steps : []).forEach((step, s) => {
      if (!step || typeof step !== 'object') return;
      if (stepIds.has(step.stepId))
        report(
          `${at}/steps/${s}/stepId`,
          `stepId "${step.stepId}" is used twice in workflow "${workflow.workflowId}"`,
        );
      stepIds.add(step.stepId);
      checkStep(ctx, workflow, step, `${at}/steps/${s}`, found);
    });
    for (const [name, value] of Object.entries(workflow.outputs ?? {})) {
      const pointer = `${at}/outputs${joinPointer(name)}`;
      try {
        const expr = parseExpression(value);
        if (expr.kind !== 'outputs') found.push({ expr, at: pointer });
      } catch (error) {
        report(pointer, (error as Error).message);
      }
    }
    checkReferences(ctx, workflow, found);
  });
  checkDependencyCycles(ctx);
  // Steps sharing an operation would report its OpenAPI problems once each.
  const seen = new Set<string>();
  return problems.filter((p) => {
    const key = `${p.file}\u0000${p.pointer}\u0000${p.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
