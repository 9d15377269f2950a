import { type ParseArgsConfig, parseArgs } from 'node:util';

/** Ends the benchmark with a one-line message and exit code 2: a usage error, not a crash. */
function usageError(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(2);
}

/** The benchmark's command-line options (after `npm run bench:<name> --`). */
export function benchArgs<T extends NonNullable<ParseArgsConfig['options']>>(options: T) {
  try {
    return parseArgs({ options, strict: true }).values;
  } catch (error) {
    return usageError((error as Error).message);
  }
}

/** A numeric option, refused with a clear message when it is not a number ≥ min. */
export function numberOption(name: string, value: string | undefined, min = 0): number {
  const number = Number(value);
  if (value === undefined || value.trim() === '' || !Number.isFinite(number) || number < min) {
    usageError(`--${name} must be a number ≥ ${min}, not ${JSON.stringify(value)}`);
  }
  return number;
}

/** A comma-separated list of whole numbers ≥ 1, e.g. `--connections 10,64`. */
export function countsOption(name: string, value: string | undefined): number[] {
  return (value ?? '').split(',').map((item) => {
    const count = numberOption(name, item, 1);
    if (!Number.isInteger(count)) usageError(`--${name} takes whole numbers, not ${item}`);
    return count;
  });
}
