/** Executing workflows: steps, actions, retries, nested workflows, dependsOn and outputs. */
import { InternalError, weakMemo } from '@mcp-identity/common';
import { allPass } from './criteria.js';
import {
  type ExpressionScope,
  evaluateExpression,
  evaluateValue,
  parseExpression,
  type RuntimeExpression,
} from './expression.js';
import { type FailureKind, RunChanges, type RunFailure, RunFailureError } from './failure.js';
import {
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_TIMEOUT_MS,
  decodeBody,
  describeAnswer,
  describeRequest,
  HttpClient,
  HttpError,
  type HttpResponse,
  tlsVerifyFromEnv,
} from './http.js';
import { inputsSchema } from './loader.js';
import { PerStep } from './memo.js';
import {
  type ArazzoModel,
  effectiveActions,
  resolveParameters,
  resolveStepTarget,
} from './model.js';
import { buildRequest } from './request.js';
import { type OnBehalfOf, RunCredentials, TokenCache } from './security.js';
import { serverBase } from './servers.js';
import { decideTransition, type Transition } from './transition.js';
import type { ActionObject, StepObject, WorkflowObject } from './types.js';

export interface RunnerLogger {
  debug(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  /** pino's: lets the runner skip building debug lines nobody writes */
  isLevelEnabled?(level: string): boolean;
}

export interface RunnerOptions {
  /** credentials and ARAZZO_DISABLE_TLS_VERIFY; default process.env */
  env?: Record<string, string | undefined>;
  /**
   * PEM certificates to trust instead of Node's bundled roots for token requests and API calls
   * (node:tls's `ca`): a private CA's, so its servers are verified rather than not at all
   */
  ca?: string;
  /** default false: one token fetch per (credentials, scopes) per run */
  tokenCache?: boolean;
  /** per HTTP request, default 30000 */
  timeoutMs?: number;
  /** default 10 MiB */
  maxResponseBytes?: number;
  logger?: RunnerLogger;
  /** waits between retries (default: a timer); tests inject their own */
  sleep?: (ms: number) => Promise<void>;
  /** clock for token expiry (default Date.now) */
  now?: () => number;
  /** steps one run may execute before it is stopped as a loop, default 1000 */
  maxStepExecutions?: number;
}

export type WorkflowResult =
  | {
      kind: 'completed';
      /** evaluated workflow outputs (unresolvable expressions -> null); {} when none declared */
      outputs: Record<string, unknown>;
      /** set when the workflow stopped because a step's success criteria failed (e.g. HTTP 4xx) */
      failedStep?: { stepId: string; statusCode?: number };
    }
  | {
      /**
       * no result to rely on: the API unreachable, a timeout, a 5xx the workflow stopped at,
       * an unusable answer, a failed token request, a run that could not be carried out
       */
      kind: 'error';
      message: string;
      stepId?: string;
      /** what failed, and whether the API may have changed */
      failure: RunFailure;
    };

/** What one run may differ in besides its inputs. */
export interface RunOptions {
  /** Exchange this caller's token for the API's tokens instead of using the client's own. */
  onBehalfOf?: OnBehalfOf;
}

export interface Runner {
  run(
    workflowId: string,
    inputs: Record<string, unknown>,
    options?: RunOptions,
  ): Promise<WorkflowResult>;
  close(): Promise<void>;
}

/** A step produced no usable result: the run ends with kind 'error'. */
class StepError extends RunFailureError {
  override readonly code = 'ERR_ARAZZO_STEP';

  constructor(
    readonly stepId: string,
    message: string,
    kind: FailureKind,
  ) {
    super(message, kind);
  }
}

/** The kind of a failure thrown while a step ran: anything untyped is the run's own. */
function kindOf(error: unknown): FailureKind {
  return error instanceof RunFailureError ? error.kind : 'workflow';
}

const MAX_NESTING = 32;

type OutputExpressions = readonly (readonly [string, RuntimeExpression])[];

const NO_OUTPUTS: OutputExpressions = [];
const parsedOutputs = weakMemo(
  (outputs: Record<string, string>): OutputExpressions =>
    Object.entries(outputs).map(([name, source]) => [name, parseExpression(source)]),
);

/** A step's or workflow's `outputs` parsed, once per object of the document. */
function outputExpressions(outputs: Record<string, string> | undefined): OutputExpressions {
  return outputs === undefined ? NO_OUTPUTS : parsedOutputs(outputs);
}

function evaluateOutputs(
  expressions: OutputExpressions,
  scope: ExpressionScope,
  into: Record<string, unknown>,
): void {
  for (const [name, expression] of expressions) {
    into[name] = evaluateExpression(expression, scope) ?? null;
  }
}

/** The actions that apply after a step, by outcome, resolved the first time each is needed. */
type StepActions = Partial<Record<'successActions' | 'failureActions', ActionObject[]>>;

/** What running one step yields: its verdict and the context the workflow goes on with. */
interface StepRun {
  success: boolean;
  scope: ExpressionScope;
  statusCode?: number;
  retryAfterHeader?: string;
  /** a 5xx answer, described: the run fails with it if the workflow stops at this step */
  serverError?: string;
}

/** What one run (one `run()` call) shares between its workflows. */
interface RunState {
  credentials: RunCredentials;
  changes: RunChanges;
  workflows: ExpressionScope['workflows'];
  dependencies: Map<string, Promise<WorkflowResult>>;
  stepExecutions: number;
}

/** One workflow being run: what its steps read, and the step outputs they write. */
interface WorkflowFrame {
  workflow: WorkflowObject;
  inputs: Record<string, unknown>;
  steps: ExpressionScope['steps'];
  state: RunState;
  depth: number;
}

type FailedStep = { stepId: string; statusCode?: number };

export class WorkflowRunner implements Runner {
  private readonly http: HttpClient;
  private readonly env: Record<string, string | undefined>;
  private readonly tokenCache: TokenCache | undefined;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly maxStepExecutions: number;
  private readonly sources: ExpressionScope['sourceDescriptions'];
  private readonly warned = new Set<string>();
  private readonly defaults = new WeakMap<WorkflowObject, [string, unknown][]>();
  private readonly stepActions = new PerStep<StepActions>();

  constructor(
    private readonly model: ArazzoModel,
    private readonly options: RunnerOptions = {},
  ) {
    this.env = options.env ?? process.env;
    this.http = new HttpClient({
      tlsVerify: tlsVerifyFromEnv(this.env),
      ca: options.ca,
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      maxResponseBytes: options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    });
    this.tokenCache = options.tokenCache ? new TokenCache(options.now ?? Date.now) : undefined;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.maxStepExecutions = options.maxStepExecutions ?? 1000;
    this.sources = Object.fromEntries(
      [...model.sources.values()].map((s) => [s.name, { name: s.name, url: s.url, type: s.type }]),
    );
  }

  async run(
    workflowId: string,
    inputs: Record<string, unknown>,
    options: RunOptions = {},
  ): Promise<WorkflowResult> {
    const workflow = this.model.workflows.get(workflowId);
    if (!workflow) {
      return {
        kind: 'error',
        message: `Workflow ${workflowId} not found in Arazzo document`,
        failure: new RunChanges().failure('workflow'),
      };
    }
    const state: RunState = {
      credentials: new RunCredentials(
        this.http,
        this.env,
        this.tokenCache,
        (message) => this.warnOnce(message),
        options.onBehalfOf,
      ),
      changes: new RunChanges(),
      workflows: {},
      dependencies: new Map(),
      stepExecutions: 0,
    };
    try {
      return await this.runWorkflow(workflow, inputs ?? {}, state, 0);
    } catch (error) {
      return {
        kind: 'error',
        message: (error as Error).message,
        failure: state.changes.failure(kindOf(error)),
      };
    }
  }

  close(): Promise<void> {
    return this.http.close();
  }

  /** Inputs with the `default`s of the workflow's inputs schema filled in where absent. */
  private withDefaults(
    workflow: WorkflowObject,
    given: Record<string, unknown>,
  ): Record<string, unknown> {
    let defaults = this.defaults.get(workflow);
    if (!defaults) {
      const properties = (inputsSchema(this.model, workflow)?.properties ?? {}) as Record<
        string,
        unknown
      >;
      defaults = Object.entries(properties).flatMap(([name, schema]) =>
        schema !== null && typeof schema === 'object' && 'default' in schema
          ? [[name, (schema as { default: unknown }).default] as [string, unknown]]
          : [],
      );
      this.defaults.set(workflow, defaults);
    }
    const missing = defaults.filter(([name]) => given[name] === undefined);
    return missing.length === 0 ? given : { ...given, ...Object.fromEntries(missing) };
  }

  /** Step actions first, then the workflow's (effectiveActions), for the step's outcome. */
  private actionsAfter(
    workflow: WorkflowObject,
    step: StepObject,
    success: boolean,
  ): readonly ActionObject[] {
    const actions =
      this.stepActions.get(workflow, step) ?? this.stepActions.set(workflow, step, {});
    const kind = success ? 'successActions' : 'failureActions';
    actions[kind] ??= effectiveActions(
      this.model,
      success ? step.onSuccess : step.onFailure,
      workflow[kind],
      kind,
    );
    return actions[kind];
  }

  private warnOnce(message: string): void {
    if (this.warned.has(message)) return;
    this.warned.add(message);
    this.options.logger?.warn({}, message);
  }

  private baseScope(
    inputs: Record<string, unknown>,
    steps: ExpressionScope['steps'],
    state: RunState,
  ): ExpressionScope {
    return {
      inputs,
      steps,
      workflows: state.workflows,
      sourceDescriptions: this.sources,
      components: (this.model.doc.components ?? {}) as ExpressionScope['components'],
    };
  }

  private async runDependencies(
    workflow: WorkflowObject,
    inputs: Record<string, unknown>,
    state: RunState,
    depth: number,
  ): Promise<WorkflowResult | undefined> {
    for (const id of workflow.dependsOn ?? []) {
      let pending = state.dependencies.get(id);
      if (!pending) {
        pending = this.runWorkflow(this.model.workflows.get(id)!, inputs, state, depth + 1);
        state.dependencies.set(id, pending);
      }
      const result = await pending;
      if (result.kind === 'error')
        return { ...result, message: `dependency workflow "${id}" failed: ${result.message}` };
      if (result.failedStep) {
        return {
          kind: 'error',
          message: `dependency workflow "${id}" failed at step "${result.failedStep.stepId}"`,
          failure: state.changes.failure('workflow'),
        };
      }
    }
    return undefined;
  }

  private async runWorkflow(
    workflow: WorkflowObject,
    inputs: Record<string, unknown>,
    state: RunState,
    depth: number,
  ): Promise<WorkflowResult> {
    try {
      return await this.runSteps(workflow, inputs, state, depth);
    } catch (error) {
      if (error instanceof StepError) {
        return {
          kind: 'error',
          message: error.message,
          stepId: error.stepId,
          failure: state.changes.failure(error.kind),
        };
      }
      throw error;
    }
  }

  private async runSteps(
    workflow: WorkflowObject,
    given: Record<string, unknown>,
    state: RunState,
    depth: number,
  ): Promise<WorkflowResult> {
    if (depth > MAX_NESTING) {
      throw new RunFailureError(`workflows nest deeper than ${MAX_NESTING} levels`, 'workflow');
    }
    const inputs = this.withDefaults(workflow, given);
    const failedDependency = await this.runDependencies(workflow, inputs, state, depth);
    if (failedDependency) return failedDependency;
    state.workflows[workflow.workflowId] = { inputs };
    const frame: WorkflowFrame = { workflow, inputs, steps: {}, state, depth };
    const retries = new Map<string, ReadonlyMap<string, number>>();
    let lastExchange: ExpressionScope | undefined;
    let index = 0;

    while (index < workflow.steps.length) {
      const step = workflow.steps[index]!;
      const run = await this.executeStep(frame, step);
      lastExchange = run.scope;
      const actions = this.actionsAfter(workflow, step, run.success);
      const { transition, retriesMade } = decideTransition({
        success: run.success,
        actions,
        scope: run.scope,
        retryAfterHeader: run.retryAfterHeader,
        retriesMade: retries.get(step.stepId) ?? new Map(),
        now: Date.now(),
      });
      retries.set(step.stepId, retriesMade);
      switch (transition.kind) {
        case 'next':
          index++;
          break;
        case 'gotoStep':
          index = workflow.steps.findIndex((s) => s.stepId === transition.stepId);
          break;
        case 'gotoWorkflow':
          return this.transferTo(frame, transition.workflowId, lastExchange);
        case 'retry': {
          const failed = await this.prepareRetry(frame, transition);
          if (failed) return failed;
          break; // the same step again
        }
        case 'end':
          return this.finish(frame, lastExchange);
        case 'fail':
          // A 5xx is no answer to the request (RFC 9110 §15.6): the run failed, unlike a 4xx
          // refusal, whose error the outputs report.
          if (run.serverError !== undefined) {
            return {
              kind: 'error',
              message: `step "${step.stepId}": ${run.serverError}`,
              stepId: step.stepId,
              failure: state.changes.failure('server-error'),
            };
          }
          return this.finish(frame, lastExchange, {
            stepId: step.stepId,
            statusCode: run.statusCode,
          });
      }
    }
    return this.finish(frame, lastExchange);
  }

  /** Waits, then runs the step or workflow the retry action names; an error result ends the run. */
  private async prepareRetry(
    frame: WorkflowFrame,
    retry: Extract<Transition, { kind: 'retry' }>,
  ): Promise<WorkflowResult | undefined> {
    await this.sleep(retry.delayMs);
    if (retry.stepId !== undefined) {
      const target = frame.workflow.steps.find((s) => s.stepId === retry.stepId)!;
      await this.executeStep(frame, target);
    } else if (retry.workflowId !== undefined) {
      const target = this.model.workflows.get(retry.workflowId)!;
      const result = await this.runWorkflow(target, frame.inputs, frame.state, frame.depth + 1);
      if (result.kind === 'error') return result;
    }
    return undefined;
  }

  /** A one-way transfer (goto a workflow): this workflow ends with the target's failed step. */
  private async transferTo(
    frame: WorkflowFrame,
    workflowId: string,
    lastExchange: ExpressionScope | undefined,
  ): Promise<WorkflowResult> {
    const target = this.model.workflows.get(workflowId)!;
    const result = await this.runWorkflow(target, frame.inputs, frame.state, frame.depth + 1);
    if (result.kind === 'error') return result;
    return this.finish(frame, lastExchange, result.failedStep);
  }

  /** Evaluates the workflow's outputs and records them for `$workflows.<id>.outputs`. */
  private finish(
    { workflow, inputs, steps, state }: WorkflowFrame,
    lastExchange: ExpressionScope | undefined,
    failedStep?: FailedStep,
  ): WorkflowResult {
    const scope = this.baseScope(inputs, steps, state);
    // Workflow outputs may read `$response`, `$statusCode`, … of the last step that ran:
    // that is how one output (an `error` from `$response.body#/detail`, say) reports
    // whichever step stopped the workflow.
    if (lastExchange) {
      const { url, method, statusCode, request, response } = lastExchange;
      Object.assign(scope, { url, method, statusCode, request, response });
    }
    const outputs: Record<string, unknown> = {};
    scope.outputs = outputs;
    evaluateOutputs(outputExpressions(workflow.outputs), scope, outputs);
    state.workflows[workflow.workflowId] = { inputs, outputs };
    return failedStep ? { kind: 'completed', outputs, failedStep } : { kind: 'completed', outputs };
  }

  /** Runs one step (an operation or a workflow) and records its outputs in the frame. */
  private async executeStep(frame: WorkflowFrame, step: StepObject): Promise<StepRun> {
    const { workflow, inputs, steps, state, depth } = frame;
    state.stepExecutions++;
    if (state.stepExecutions > this.maxStepExecutions) {
      throw new StepError(
        step.stepId,
        `step "${step.stepId}": the run executed more than ${this.maxStepExecutions} steps (a goto or retry loop?)`,
        'workflow',
      );
    }
    const scope = this.baseScope(inputs, steps, state);
    const target = resolveStepTarget(this.model, step);
    let outcome: StepRun;
    try {
      if (target.kind === 'operation') {
        const baseUrl = serverBase(target.operation, this.model.sourceServers, this.env);
        const credentials = await state.credentials.forOperation(target.operation, baseUrl);
        const request = await buildRequest(
          this.model,
          workflow,
          step,
          target.operation,
          scope,
          credentials,
          baseUrl,
        );
        const started = performance.now();
        let response: HttpResponse;
        try {
          response = await this.http.send(request);
        } catch (error) {
          if (error instanceof HttpError)
            state.changes.record(request.method, error.sent, error.status);
          throw error;
        }
        state.changes.record(request.method, true, response.status);
        const { logger } = this.options;
        if (logger && (logger.isLevelEnabled?.('debug') ?? true)) {
          logger.debug(
            {
              workflowId: workflow.workflowId,
              stepId: step.stepId,
              method: request.method,
              status: response.status,
              ms: Math.round(performance.now() - started),
            },
            'arazzo step',
          );
        }
        scope.url = request.url;
        scope.method = request.method;
        scope.statusCode = response.status;
        scope.request = request.exchange;
        scope.response = { headers: response.headers, body: decodeBody(request, response) };
        const success = step.successCriteria
          ? allPass(step.successCriteria, scope)
          : response.status >= 200 && response.status <= 299;
        outcome = {
          success,
          scope,
          statusCode: response.status,
          retryAfterHeader: response.headers['retry-after'],
        };
        if (response.status >= 500) {
          const answer = describeAnswer(response.status, response.body.toString('utf8'));
          outcome.serverError = `${describeRequest(request)}: the server answered ${answer}`;
        }
      } else if (target.kind === 'workflow') {
        const childInputs: Record<string, unknown> = {};
        for (const parameter of resolveParameters(this.model, step.parameters)) {
          childInputs[parameter.name] = evaluateValue(parameter.value, scope);
        }
        const result = await this.runWorkflow(target.workflow, childInputs, state, depth + 1);
        if (result.kind === 'error') {
          throw new RunFailureError(
            `workflow "${target.workflow.workflowId}": ${result.message}`,
            result.failure.kind,
          );
        }
        scope.outputs = result.outputs;
        scope.statusCode = result.failedStep?.statusCode;
        const success = !result.failedStep && allPass(step.successCriteria, scope);
        outcome = { success, scope, statusCode: result.failedStep?.statusCode };
      } else {
        throw new InternalError(target.problem);
      }
    } catch (error) {
      throw new StepError(
        step.stepId,
        `step "${step.stepId}": ${(error as Error).message}`,
        kindOf(error),
      );
    }
    const outputs: Record<string, unknown> = {};
    evaluateOutputs(outputExpressions(step.outputs), outcome.scope, outputs);
    steps[step.stepId] = outputs;
    return outcome;
  }
}
