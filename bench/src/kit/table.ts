/** A Markdown table with right-aligned numeric columns, padded to read well in a terminal too. */
export function markdownTable(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: string[]) =>
    `| ${cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[column] as number) : cell.padStart(widths[column] as number))).join(' | ')} |`;
  const rule = `|${widths.map((width, column) => (column === 0 ? `${'-'.repeat(width + 2)}` : `${'-'.repeat(width + 1)}:`)).join('|')}|`;
  return [line(header), rule, ...rows.map(line)].join('\n');
}

export function fixed(value: number | undefined, digits: number): string {
  return value === undefined || !Number.isFinite(value) ? 'n/a' : value.toFixed(digits);
}

export function percent(part: number | undefined, whole: number | undefined): string {
  return part === undefined || whole === undefined || whole === 0
    ? '—'
    : `${((part / whole) * 100).toFixed(1)}%`;
}

/** How many times `whole` is `part`, e.g. "7.4×". */
export function times(part: number | undefined, whole: number | undefined, digits = 1): string {
  return part === undefined || whole === undefined || whole === 0
    ? '—'
    : `${(part / whole).toFixed(digits)}×`;
}
