/**
 * The median round by one figure (the lower median for an even count): benchmarks run their
 * legs in turns, round after round, so load from elsewhere on the machine falls on all alike,
 * and report each leg's median round whole, so its figures come from one measurement.
 */
export function medianRound<T>(rounds: readonly T[], by: (round: T) => number): T {
  const sorted = [...rounds].sort((a, b) => by(a) - by(b));
  return sorted[Math.floor((sorted.length - 1) / 2)] as T;
}

/**
 * Runs every leg once per round, the legs taking turns round after round, and returns each leg's
 * median round by `by` (`medianRound`), keyed by leg.
 */
export async function interleavedRounds<Leg, Result>(
  legs: readonly Leg[],
  rounds: number,
  run: (leg: Leg, round: number) => Promise<Result>,
  by: (result: Result) => number,
): Promise<Map<Leg, Result>> {
  const results = new Map<Leg, Result[]>(legs.map((leg) => [leg, []]));
  for (let round = 0; round < rounds; round++) {
    for (const leg of legs) results.get(leg)?.push(await run(leg, round));
  }
  return new Map([...results].map(([leg, list]) => [leg, medianRound(list, by)]));
}
