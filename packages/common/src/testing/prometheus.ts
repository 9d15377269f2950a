/** The value of one series (`name{labels}`, as written) in a Prometheus text exposition; 0 when absent. */
export function metricValue(exposition: string, series: string): number {
  const line = exposition.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

/**
 * Problems of an exposition's layout in the Prometheus text format: a family declared twice, or
 * a sample apart from its family's group (every line of a family must be one group).
 */
export function expositionProblems(exposition: string): string[] {
  const problems: string[] = [];
  const declared = new Set<string>();
  let current = '';
  for (const line of exposition.split('\n')) {
    const type = /^# TYPE (\S+) /.exec(line);
    if (type) {
      const family = type[1] as string;
      if (declared.has(family)) problems.push(`${family} declared twice`);
      declared.add(family);
      current = family;
    } else if (line !== '' && !line.startsWith('#')) {
      const name = /^[^{ ]+/.exec(line)?.[0] ?? '';
      const own =
        name === current || (/_(bucket|sum|count)$/.test(name) && name.startsWith(current));
      if (!own) problems.push(`${line} outside the group of ${name}`);
    }
  }
  return problems;
}
