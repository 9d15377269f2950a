/**
 * Adds up the Prometheus text expositions of several processes: samples of the same series
 * (name and labels) are summed, which is right for counters and histograms, the only kinds the
 * gateway exports. HELP and TYPE lines are kept once, in order of first appearance.
 */
export function mergePrometheusText(texts: string[]): string {
  const lines: string[] = [];
  const sums = new Map<string, number>();
  for (const text of texts) {
    for (const line of text.split('\n')) {
      if (line === '') continue;
      if (line.startsWith('#')) {
        if (!sums.has(line)) {
          sums.set(line, Number.NaN);
          lines.push(line);
        }
        continue;
      }
      const space = line.lastIndexOf(' ');
      const series = line.slice(0, space);
      const value = Number(line.slice(space + 1));
      if (!sums.has(series)) lines.push(series);
      sums.set(series, (sums.get(series) ?? 0) + value);
    }
  }
  const out = lines.map((line) => (line.startsWith('#') ? line : `${line} ${sums.get(line)}`));
  return out.length > 0 ? `${out.join('\n')}\n` : '';
}
