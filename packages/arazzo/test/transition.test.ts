import { decideTransition, type ExpressionScope, type StepOutcome } from '@mcp-identity/arazzo';
import { describe, expect, it } from 'vitest';

type ActionObject = StepOutcome['actions'][number];

/** A `Retry-After` header is obeyed up to 60 s (README, *Supported Arazzo*, Actions). */
const MAX_RETRY_WAIT_MS = 60_000;

const NOW = Date.parse('2026-01-01T00:00:00Z');

function scopeWith(statusCode: number): ExpressionScope {
  return {
    statusCode,
    inputs: {},
    steps: {},
    workflows: {},
    sourceDescriptions: {},
    components: {},
  };
}

function outcome(partial: Partial<StepOutcome> & Pick<StepOutcome, 'success'>): StepOutcome {
  return {
    actions: [],
    scope: scopeWith(partial.success ? 200 : 503),
    retriesMade: new Map(),
    now: NOW,
    ...partial,
  };
}

const when = (condition: string) => [{ condition }];

describe('after a successful step', () => {
  it('moves on to the next step when no success action applies', () => {
    const decision = decideTransition(
      outcome({
        success: true,
        actions: [{ name: 'other', type: 'end', criteria: when('$statusCode == 201') }],
      }),
    );
    expect(decision.transition).toEqual({ kind: 'next' });
  });

  it('ends the workflow on an end action', () => {
    const decision = decideTransition(
      outcome({ success: true, actions: [{ name: 'stop', type: 'end' }] }),
    );
    expect(decision.transition).toEqual({ kind: 'end' });
  });

  it('goes to a step, taking the first action whose criteria all hold', () => {
    const actions: ActionObject[] = [
      {
        name: 'no',
        type: 'goto',
        stepId: 'a',
        criteria: [...when('$statusCode == 200'), ...when('1 == 2')],
      },
      { name: 'yes', type: 'goto', stepId: 'b', criteria: when('$statusCode == 200') },
      { name: 'later', type: 'end' },
    ];
    expect(decideTransition(outcome({ success: true, actions })).transition).toEqual({
      kind: 'gotoStep',
      stepId: 'b',
    });
  });

  it('goes to a workflow', () => {
    const actions: ActionObject[] = [{ name: 'go', type: 'goto', workflowId: 'other' }];
    expect(decideTransition(outcome({ success: true, actions })).transition).toEqual({
      kind: 'gotoWorkflow',
      workflowId: 'other',
    });
  });

  it('clears the retries the step had made', () => {
    const decision = decideTransition(
      outcome({ success: true, retriesMade: new Map([['again', 2]]) }),
    );
    expect(decision.retriesMade.size).toBe(0);
  });
});

describe('after a failed step', () => {
  it('fails the workflow when no failure action applies', () => {
    const actions: ActionObject[] = [
      { name: 'only404', type: 'goto', stepId: 'x', criteria: when('$statusCode == 404') },
    ];
    expect(decideTransition(outcome({ success: false, actions })).transition).toEqual({
      kind: 'fail',
    });
  });

  it('fails the workflow on an end action', () => {
    const actions: ActionObject[] = [{ name: 'stop', type: 'end' }];
    expect(decideTransition(outcome({ success: false, actions })).transition).toEqual({
      kind: 'fail',
    });
  });

  it('goes to a step or to a workflow', () => {
    const toStep: ActionObject[] = [{ name: 'go', type: 'goto', stepId: 'recover' }];
    expect(decideTransition(outcome({ success: false, actions: toStep })).transition).toEqual({
      kind: 'gotoStep',
      stepId: 'recover',
    });
    const toWorkflow: ActionObject[] = [{ name: 'go', type: 'goto', workflowId: 'fallback' }];
    expect(decideTransition(outcome({ success: false, actions: toWorkflow })).transition).toEqual({
      kind: 'gotoWorkflow',
      workflowId: 'fallback',
    });
  });

  it('retries after retryAfter seconds and counts the retry under the action name', () => {
    const actions: ActionObject[] = [
      { name: 'again', type: 'retry', retryAfter: 1.5, retryLimit: 3 },
    ];
    const retriesMade = new Map([['again', 1]]);
    const decision = decideTransition(outcome({ success: false, actions, retriesMade }));
    expect(decision.transition).toEqual({ kind: 'retry', delayMs: 1500 });
    expect([...decision.retriesMade]).toEqual([['again', 2]]);
    expect([...retriesMade]).toEqual([['again', 1]]);
  });

  it('retries at once, once, when the action sets neither retryAfter nor retryLimit', () => {
    const actions: ActionObject[] = [{ name: 'again', type: 'retry' }];
    const first = decideTransition(outcome({ success: false, actions }));
    expect(first.transition).toEqual({ kind: 'retry', delayMs: 0 });
    const second = decideTransition(
      outcome({ success: false, actions, retriesMade: first.retriesMade }),
    );
    expect(second.transition).toEqual({ kind: 'fail' });
  });

  it('names the step or workflow a retry runs first', () => {
    const viaStep: ActionObject[] = [{ name: 'r', type: 'retry', stepId: 'login' }];
    expect(decideTransition(outcome({ success: false, actions: viaStep })).transition).toEqual({
      kind: 'retry',
      delayMs: 0,
      stepId: 'login',
    });
    const viaWorkflow: ActionObject[] = [{ name: 'r', type: 'retry', workflowId: 'refresh' }];
    expect(decideTransition(outcome({ success: false, actions: viaWorkflow })).transition).toEqual({
      kind: 'retry',
      delayMs: 0,
      workflowId: 'refresh',
    });
  });

  it('passes over a retry action whose limit is used up, so the next action applies', () => {
    const actions: ActionObject[] = [
      { name: 'again', type: 'retry', retryLimit: 2 },
      { name: 'give up', type: 'goto', stepId: 'report' },
    ];
    const decision = decideTransition(
      outcome({ success: false, actions, retriesMade: new Map([['again', 2]]) }),
    );
    expect(decision.transition).toEqual({ kind: 'gotoStep', stepId: 'report' });
    expect([...decision.retriesMade]).toEqual([['again', 2]]);
  });

  it('waits as long as a Retry-After header in seconds says, over retryAfter', () => {
    const actions: ActionObject[] = [{ name: 'again', type: 'retry', retryAfter: 5 }];
    const decision = decideTransition(outcome({ success: false, actions, retryAfterHeader: '2' }));
    expect(decision.transition).toEqual({ kind: 'retry', delayMs: 2000 });
  });

  it('waits until a Retry-After HTTP-date, measured from the given time', () => {
    const actions: ActionObject[] = [{ name: 'again', type: 'retry' }];
    const retryAfterHeader = new Date(NOW + 7000).toUTCString();
    const decision = decideTransition(outcome({ success: false, actions, retryAfterHeader }));
    expect(decision.transition).toEqual({ kind: 'retry', delayMs: 7000 });
  });

  it('caps a Retry-After wait, never waits a negative time, and ignores a header it cannot read', () => {
    const actions: ActionObject[] = [{ name: 'again', type: 'retry', retryAfter: 3 }];
    const delay = (retryAfterHeader: string) => {
      const { transition } = decideTransition(
        outcome({ success: false, actions, retryAfterHeader }),
      );
      return transition.kind === 'retry' ? transition.delayMs : undefined;
    };
    expect(delay('86400')).toBe(MAX_RETRY_WAIT_MS);
    expect(delay(new Date(NOW - 60_000).toUTCString())).toBe(0);
    expect(delay('soon')).toBe(3000);
  });
});
