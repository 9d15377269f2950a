import { ConfigError } from './config.js';

/**
 * Runs a command's main function: a configuration problem prints its message
 * and exits 2; any other failure prints one line (no stack trace unless DEBUG
 * is set) and exits 1. A numeric return value becomes the exit code.
 */
export function runMain(main: () => Promise<unknown>): void {
  main().then(
    (code) => {
      if (typeof code === 'number') process.exitCode = code;
    },
    (error: unknown) => {
      if (error instanceof ConfigError) {
        process.stderr.write(`${error.message}\n`);
        process.exit(error.exitCode);
      }
      const text = process.env.DEBUG
        ? String((error as Error)?.stack ?? error)
        : String((error as Error)?.message ?? error);
      process.stderr.write(`error: ${text}\n`);
      process.exit(1);
    },
  );
}
