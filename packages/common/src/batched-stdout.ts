import { pino } from 'pino';

/** Bytes of log lines gathered before they are handed to the file descriptor in one write. */
const BATCH_BYTES = 32 * 1024;
const FLUSH_EVERY_MS = 100;

/**
 * Joins log lines into batches before handing them to sonic-boom. sonic-boom appends each
 * line to its pending string and measures the whole of it again (`Buffer.byteLength`), which
 * flattens and scans up to 16 KiB per line; collecting lines in an array and joining them once
 * per batch costs a push per line.
 */
class LineBatch implements pino.DestinationStream {
  private lines: string[] = [];
  private length = 0;

  constructor(private readonly out: ReturnType<typeof pino.destination>) {}

  write(line: string): void {
    this.lines.push(line);
    this.length += line.length;
    if (this.length >= BATCH_BYTES) this.flush();
  }

  /** Hands the gathered lines over; with a callback (`logger.flush`), once they are written. */
  flush(callback?: (error?: Error) => void): void {
    if (this.lines.length > 0) {
      this.out.write(this.lines.length === 1 ? (this.lines[0] as string) : this.lines.join(''));
      this.lines = [];
      this.length = 0;
    }
    if (callback) this.out.flush(callback);
  }
}

let stdoutBatch: LineBatch | undefined;

/**
 * Standard output for a service's request and audit logs, written in batches: under load the
 * lines (one or more per request) are joined into writes of at least 32 KiB instead of one
 * write per few lines, and a quiet service's lines go out within 100 ms. Every logger of the
 * process shares one batch (there is one standard output), and what is buffered is flushed
 * when the process exits.
 */
export function batchedStdout(): pino.DestinationStream {
  if (stdoutBatch) return stdoutBatch;
  const flush = () => stdoutBatch?.flush();
  // Registered before pino's own exit hooks (added with the destination below), so the lines
  // gathered here reach sonic-boom before it is flushed for the last time.
  process.on('beforeExit', flush);
  process.on('exit', flush);
  stdoutBatch = new LineBatch(pino.destination({ dest: 1, sync: false }));
  setInterval(flush, FLUSH_EVERY_MS).unref();
  return stdoutBatch;
}
