export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  env: Record<string, string | undefined>;
  /** The whole of standard input (for `--password-stdin`). */
  readStdin?: () => Promise<string>;
}
