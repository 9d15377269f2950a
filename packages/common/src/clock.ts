/** Milliseconds since the epoch; injectable so expiry rules are testable without sleeping. */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();

/** The clock's time in whole seconds since the epoch: JWT `iat`/`exp` (RFC 7519 §2 NumericDate). */
export function epochSeconds(clock: Clock): number {
  return Math.floor(clock() / 1000);
}
