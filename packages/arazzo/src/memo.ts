import type { StepObject, WorkflowObject } from './types.js';

/**
 * `compute` memoised by its string argument in a map emptied once it holds `limit` entries:
 * the keys come from loaded documents or the environment, so they are few, and the limit only
 * bounds what unusual input can make it hold. A throwing `compute` caches nothing.
 */
export function boundedMemo<V>(limit: number, compute: (key: string) => V): (key: string) => V {
  const values = new Map<string, V>();
  return (key) => {
    let value = values.get(key);
    if (value === undefined) {
      value = compute(key);
      if (values.size >= limit) values.clear();
      values.set(key, value);
    }
    return value;
  };
}

/**
 * `compute` memoised by its object argument, held weakly: for parts of a loaded document,
 * which never change once loaded.
 */
export function weakMemo<K extends object, V>(compute: (key: K) => V): (key: K) => V {
  const values = new WeakMap<K, V>();
  return (key) => {
    let value = values.get(key);
    if (value === undefined) {
      value = compute(key);
      values.set(key, value);
    }
    return value;
  };
}

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
