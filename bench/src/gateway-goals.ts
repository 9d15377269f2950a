/**
 * Goals a `bench:gateway` run is checked against, one flag each. None is set by default: a run
 * prints what it measured, and a goal only when the person running it asks for one (issue 15's
 * were `--goal-share-of-nginx 35 --goal-cpu-ms 0.04 --goal-added-p50-ms 0.2 --goal-rss-ratio 1.5`).
 */
import { numberOption } from './kit/options.js';

export const GOAL_OPTIONS = {
  'goal-share-of-nginx': { type: 'string' },
  'goal-cpu-ms': { type: 'string' },
  'goal-added-p50-ms': { type: 'string' },
  'goal-rss-ratio': { type: 'string' },
} as const;

export interface GatewayGoals {
  /** Least throughput as a share of nginx as a proxy on the same cores, in percent. */
  shareOfNginxPercent?: number;
  /** Most CPU time per request, in ms. */
  cpuMs?: number;
  /** Most p50 the gateway adds to the direct row at 10 connections, in ms. */
  addedP50Ms?: number;
  /** Most peak RSS under load, as a multiple of RSS right after start-up. */
  rssRatio?: number;
}

type GoalValues = { [K in keyof typeof GOAL_OPTIONS]?: string | undefined };

/** The goals given on the command line; a value that is not a number ≥ 0 is a usage error. */
export function gatewayGoals(values: GoalValues): GatewayGoals {
  const goal = (name: keyof typeof GOAL_OPTIONS) => {
    const value = values[name];
    return value === undefined ? undefined : numberOption(name, value);
  };
  const goals: GatewayGoals = {};
  const set = <K extends keyof GatewayGoals>(key: K, value: number | undefined) => {
    if (value !== undefined) goals[key] = value;
  };
  set('shareOfNginxPercent', goal('goal-share-of-nginx'));
  set('cpuMs', goal('goal-cpu-ms'));
  set('addedP50Ms', goal('goal-added-p50-ms'));
  set('rssRatio', goal('goal-rss-ratio'));
  return goals;
}

/**
 * `goal ≤ 0.04: missed` for a measured figure, or '' when no goal was given. A figure that could
 * not be measured neither meets nor misses its goal.
 */
export function verdict(
  measured: number | undefined,
  goal: number | undefined,
  bound: '≥' | '≤',
  unit = '',
): string {
  if (goal === undefined) return '';
  const shown = `goal ${bound} ${goal}${unit}`;
  if (measured === undefined || Number.isNaN(measured)) return `${shown}: not measured`;
  const met = bound === '≥' ? measured >= goal : measured <= goal;
  return `${shown}: ${met ? 'met' : 'missed'}`;
}
