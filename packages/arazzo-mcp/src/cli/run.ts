import { ArazzoValidationError } from '@mcp-identity/arazzo';
import { AccountError } from '../auth/accounts.js';
import { ToolShapeError } from '../tools/shape.js';
import { manageAccounts } from './accounts.js';
import { parseCommandLine } from './command-line.js';
import { listTools, validate } from './document-commands.js';
import { HELP } from './help.js';
import type { CliIo } from './io.js';
import { serve } from './serve.js';

/** Runs one command; resolves to the exit code (serve resolves once the server is up). */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const command = parseCommandLine(argv, io.env);
  try {
    switch (command.name) {
      case 'help':
        io.out(HELP);
        return 0;
      case 'validate':
        return await validate(command.options, io);
      case 'tools':
        return await listTools(command.options, io);
      case 'serve':
        return await serve(command.options, io);
      case 'accounts':
        return await manageAccounts(command.action, command.options, io);
    }
  } catch (error) {
    if (error instanceof AccountError) {
      io.err(`error: ${error.message}`);
      return 1;
    }
    const problems = describeLoadFailure(error);
    if (problems === undefined) throw error;
    io.err(problems.join('\n'));
    return 1;
  }
}

/** Every problem of an invalid document or tool set, one per line; undefined for other errors. */
function describeLoadFailure(error: unknown): string[] | undefined {
  if (error instanceof ArazzoValidationError) {
    return [
      `Invalid Arazzo/OpenAPI description (${plural(error.problems.length, 'problem')}):`,
      ...error.problems.map((p) => `  ${p.file}${p.pointer ? `#${p.pointer}` : ''}: ${p.message}`),
    ];
  }
  if (error instanceof ToolShapeError) return [error.message];
  return undefined;
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
