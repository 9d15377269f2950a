/** Milliseconds since the epoch; injectable so expiry rules are testable without sleeping. */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();
