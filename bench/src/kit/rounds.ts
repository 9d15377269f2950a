/**
 * The median round by one figure (the lower median for an even count): benchmarks run their
 * legs in turns, round after round, so load from elsewhere on the machine falls on all alike,
 * and report each leg's median round whole, so its figures come from one measurement.
 */
export function medianRound<T>(rounds: readonly T[], by: (round: T) => number): T {
  const sorted = [...rounds].sort((a, b) => by(a) - by(b));
  return sorted[Math.floor((sorted.length - 1) / 2)] as T;
}
