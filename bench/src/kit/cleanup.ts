/**
 * Everything a benchmark started, stopped in reverse order whatever happens: on success, on an
 * exception, and on Ctrl-C / SIGTERM (a benchmark must never leave servers behind).
 */
export class Cleanup {
  private readonly steps: Array<() => unknown> = [];
  private running: Promise<void> | undefined;

  constructor() {
    // `on`, not `once`: Ctrl-C reaches npm, tsx and this process, and tsx relays it once more.
    // A second signal must not find tsx's handler alone (it would exit mid-cleanup).
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.on(signal, () => {
        void this.run().finally(() => process.exit(130));
      });
    }
  }

  add(step: () => unknown): void {
    this.steps.push(step);
  }

  run(): Promise<void> {
    this.running ??= (async () => {
      while (this.steps.length > 0) {
        const step = this.steps.pop() as () => unknown;
        try {
          await step();
        } catch (error) {
          console.error(`cleanup step failed: ${(error as Error).message}`);
        }
      }
    })();
    return this.running;
  }
}
