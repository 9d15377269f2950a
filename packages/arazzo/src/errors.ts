import { McpIdentityError } from '@mcp-identity/common';

export interface ArazzoProblem {
  /** absolute path or URL of the document the problem is in */
  file: string;
  /** JSON pointer inside that document ('' for the whole document) */
  pointer: string;
  message: string;
}

export function formatProblem(problem: ArazzoProblem): string {
  return `${problem.file}#${problem.pointer}: ${problem.message}`;
}

/** Loading or validation found problems; `problems` lists every one of them. */
export class ArazzoValidationError extends McpIdentityError {
  readonly code = 'ERR_ARAZZO_INVALID';
  readonly problems: ArazzoProblem[];

  constructor(problems: ArazzoProblem[]) {
    const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
    super(
      `invalid Arazzo description (${count}):\n${problems.map((p) => `  ${formatProblem(p)}`).join('\n')}`,
    );
    this.problems = problems;
  }
}
