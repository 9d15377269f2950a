/**
 * The reference sends a tool's description through a Python docstring, which FastMCP reads
 * back with `inspect.getdoc()`. That cleaning is reproduced here (Python's `inspect.cleandoc`):
 * tabs expanded, the first line left-trimmed, the common indentation of the other lines
 * removed, and leading and trailing blank lines dropped. YAML block scalars (`summary: |`)
 * therefore lose their trailing newline just as they do in the reference.
 */
export function cleanDocstring(text: string): string {
  const lines = text.split('\n').map(expandTabs);
  const indents = lines
    .slice(1)
    .filter((line) => line.trimStart() !== '')
    .map((line) => line.length - line.trimStart().length);
  const margin = indents.length > 0 ? Math.min(...indents) : 0;
  const cleaned = [
    (lines[0] ?? '').trimStart(),
    ...lines.slice(1).map((line) => line.slice(margin)),
  ];
  while (cleaned.length > 0 && cleaned[cleaned.length - 1] === '') cleaned.pop();
  while (cleaned.length > 0 && cleaned[0] === '') cleaned.shift();
  return cleaned.join('\n');
}

function expandTabs(line: string): string {
  let out = '';
  for (const ch of line) {
    out += ch === '\t' ? ' '.repeat(8 - (out.length % 8)) : ch;
  }
  return out;
}
