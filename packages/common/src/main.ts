import { ConfigError } from './config.js';
import { packageVersion } from './package-version.js';
import { pinTickObjectMaps } from './tick-maps.js';

export interface MainOptions {
  /**
   * `import.meta.url` of the command's compiled entry point (`dist/bin.js`): `--version` as the
   * first argument then prints the version of the package that holds it and exits 0.
   */
  entryPoint?: string;
}

/**
 * Runs a command's main function: a configuration problem prints its message
 * and exits 2; any other failure prints one line (no stack trace unless DEBUG
 * is set) and exits 1. A numeric return value becomes the exit code. Before anything else, keeps
 * `process.nextTick` fast for the life of the process (`pinTickObjectMaps`).
 */
export function runMain(main: () => Promise<unknown>, options: MainOptions = {}): void {
  pinTickObjectMaps();
  if (options.entryPoint !== undefined && process.argv[2] === '--version') {
    process.stdout.write(`${packageVersion(options.entryPoint)}\n`);
    return;
  }
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
