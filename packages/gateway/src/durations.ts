const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * Reads a configuration duration: a number of seconds (WSO2's TOML uses plain numbers in some
 * keys) or a Go-style string such as `500ms`, `30s`, `5m`, `1h`. Returns milliseconds, or
 * undefined when the value is not a duration.
 */
export function parseDurationMs(value: unknown): number | undefined {
  if (typeof value === 'number') {
    return Number.isFinite(value) && value >= 0 ? value * 1000 : undefined;
  }
  if (typeof value !== 'string') return undefined;
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(value.trim());
  if (!match) return undefined;
  return Number(match[1]) * (UNIT_MS[match[2] as string] as number);
}
