/**
 * What a workflow does after one of its steps ran (Arazzo 1.0.1, "Success Action Object" and
 * "Failure Action Object"): a pure decision from the step's outcome, the actions that apply to
 * it and the retries made so far. The runner carries the decision out.
 */
import { allPass } from './criteria.js';
import type { ExpressionScope } from './expression.js';
import type { ActionObject } from './types.js';

/** A `Retry-After` response header is obeyed up to this wait. */
const MAX_RETRY_WAIT_MS = 60_000;

export type Transition =
  /** no action applies to a successful step: the following step runs (or the workflow ends) */
  | { kind: 'next' }
  | { kind: 'gotoStep'; stepId: string }
  /** a one-way transfer: the target workflow runs and this workflow ends with its result */
  | { kind: 'gotoWorkflow'; workflowId: string }
  /** wait, run `stepId` or `workflowId` when the action names one, then run the same step again */
  | { kind: 'retry'; delayMs: number; stepId?: string; workflowId?: string }
  /** the workflow ends normally (an `end` success action) */
  | { kind: 'end' }
  /** the workflow stops at this step (an `end` failure action, or no failure action applies) */
  | { kind: 'fail' };

export interface StepOutcome {
  /** whether the step's success criteria held */
  success: boolean;
  /**
   * the actions for that outcome, step actions first: onSuccess then the workflow's
   * successActions, or onFailure then failureActions
   */
  actions: readonly ActionObject[];
  /** the step's context, against which each action's criteria are evaluated */
  scope: ExpressionScope;
  /** the response's `Retry-After` header, when it had one */
  retryAfterHeader?: string;
  /** retries of this step made so far, per retry action name */
  retriesMade: ReadonlyMap<string, number>;
  /** the current time in ms since the epoch, for a `Retry-After` HTTP-date */
  now: number;
}

export interface StepDecision {
  transition: Transition;
  /**
   * retries of this step made once the decision is carried out: cleared by a success, one more
   * for the retry action chosen
   */
  retriesMade: ReadonlyMap<string, number>;
}

const NO_RETRIES: ReadonlyMap<string, number> = new Map();

/** The transition after a step, and the step's retry counts after it. */
export function decideTransition(outcome: StepOutcome): StepDecision {
  return outcome.success ? afterSuccess(outcome) : afterFailure(outcome);
}

function afterSuccess({ actions, scope }: StepOutcome): StepDecision {
  const action = actions.find((candidate) => allPass(candidate.criteria, scope));
  return { transition: actionTransition(action, 'next'), retriesMade: NO_RETRIES };
}

/**
 * The first failure action whose criteria hold wins; a retry action whose retryLimit (default 1)
 * is used up is passed over, so the actions after it apply.
 */
function afterFailure({
  actions,
  scope,
  retriesMade,
  retryAfterHeader,
  now,
}: StepOutcome): StepDecision {
  for (const action of actions) {
    if (!allPass(action.criteria, scope)) continue;
    if (action.type !== 'retry')
      return { transition: actionTransition(action, 'fail'), retriesMade };
    const made = retriesMade.get(action.name) ?? 0;
    if (made >= (action.retryLimit ?? 1)) continue;
    const transition: Transition = {
      kind: 'retry',
      delayMs: retryDelayMs(action, retryAfterHeader, now),
      ...(action.stepId !== undefined && { stepId: action.stepId }),
      ...(action.workflowId !== undefined && { workflowId: action.workflowId }),
    };
    return { transition, retriesMade: new Map(retriesMade).set(action.name, made + 1) };
  }
  return { transition: { kind: 'fail' }, retriesMade };
}

/** An `end` or `goto` action; `otherwise` when none applies or it ends the workflow. */
function actionTransition(
  action: ActionObject | undefined,
  otherwise: 'next' | 'fail',
): Transition {
  if (!action) return { kind: otherwise };
  if (action.type === 'end') return { kind: otherwise === 'next' ? 'end' : 'fail' };
  if (action.workflowId !== undefined)
    return { kind: 'gotoWorkflow', workflowId: action.workflowId };
  return { kind: 'gotoStep', stepId: action.stepId! };
}

/**
 * A `Retry-After` header (RFC 9110 §10.2.3: seconds or an HTTP-date) wins over the action's
 * `retryAfter` seconds, and is capped so a server cannot stall a run.
 */
function retryDelayMs(action: ActionObject, header: string | undefined, now: number): number {
  if (header !== undefined) {
    const seconds = Number(header);
    const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - now;
    if (Number.isFinite(ms)) return Math.min(Math.max(ms, 0), MAX_RETRY_WAIT_MS);
  }
  return Math.max(action.retryAfter ?? 0, 0) * 1000;
}
