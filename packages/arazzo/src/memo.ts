import type { StepObject, WorkflowObject } from './types.js';

/**
 * Values kept per step of a workflow, held weakly. The workflow is part of the key: what a
 * step needs (its parameters, its actions) depends on its workflow's too.
 */
export class PerStep<V> {
  private readonly byWorkflow = new WeakMap<WorkflowObject, WeakMap<StepObject, V>>();

  get(workflow: WorkflowObject, step: StepObject): V | undefined {
    return this.byWorkflow.get(workflow)?.get(step);
  }

  /** Keeps `value` for the step and returns it. */
  set(workflow: WorkflowObject, step: StepObject, value: V): V {
    let steps = this.byWorkflow.get(workflow);
    if (steps === undefined) {
      steps = new WeakMap();
      this.byWorkflow.set(workflow, steps);
    }
    steps.set(step, value);
    return value;
  }
}
