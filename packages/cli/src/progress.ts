/** Start-up progress for people: one line per step, timed, on stderr. */
export interface Progress {
  step<T>(label: string, work: () => Promise<T>, done?: (result: T) => string): Promise<T>;
  info(line: string): void;
}

export function createProgress(stream: NodeJS.WritableStream = process.stderr): Progress {
  return {
    async step(label, work, done) {
      const started = Date.now();
      stream.write(`  … ${label}\n`);
      try {
        const result = await work();
        const seconds = ((Date.now() - started) / 1000).toFixed(1);
        stream.write(`  ✓ ${done ? done(result) : label} (${seconds} s)\n`);
        return result;
      } catch (error) {
        stream.write(`  ✗ ${label}: ${(error as Error).message}\n`);
        throw error;
      }
    },
    info(line) {
      stream.write(`${line}\n`);
    },
  };
}
