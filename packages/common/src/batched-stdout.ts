import { pino } from 'pino';

/** Bytes of log lines gathered before they are handed to the file descriptor in one write. */
const BATCH_BYTES = 32 * 1024;
const FLUSH_EVERY_MS = 100;

/** sonic-boom in buffer mode, which its type declarations leave out (they name string writes). */
interface BufferDestination {
  write(bytes: Buffer): boolean;
  /** sonic-boom's `write` event: how many bytes reached the file descriptor. */
  on(event: 'write', listener: (bytes: number) => void): unknown;
  on(event: 'error', listener: (error: NodeJS.ErrnoException) => void): unknown;
}

/**
 * Room for a batch: a line is encoded into it only when its worst case fits (three UTF-8 bytes
 * per UTF-16 code unit), and a batch is handed over once it holds BATCH_BYTES.
 */
const CAPACITY = 2 * BATCH_BYTES;
const WORST_BYTES_PER_UNIT = 3;

/**
 * Gathers log lines into batches for sonic-boom, in its buffer mode: each line is encoded once,
 * straight into the batch, and is garbage as soon as it is written. Handing sonic-boom strings
 * would have each batch joined, flattened, measured and encoded again, and the lines waiting in
 * it would outlive young-generation collections.
 */
class LineBatch implements pino.DestinationStream {
  private batch = Buffer.allocUnsafe(CAPACITY);
  private used = 0;
  /** Bytes handed to sonic-boom, and bytes it has written: equal once everything is out. */
  private handed = 0;
  private written = 0;
  /** A write failed: nothing more will reach the file descriptor. */
  private broken = false;
  private readonly waiting: Array<(error?: Error) => void> = [];

  constructor(private readonly out: BufferDestination) {
    out.on('write', (bytes) => {
      this.written += bytes;
      if (this.isDrained()) this.settle();
    });
    out.on('error', (error) => {
      this.broken = true;
      this.settle();
      // pino's own listener, added before this one, stops logging on EPIPE (the reader is gone)
      // and emits any other error again: that one stays as fatal as without this listener.
      if (error.code !== 'EPIPE') throw error;
    });
  }

  write(line: string): void {
    const worst = line.length * WORST_BYTES_PER_UNIT;
    if (this.used + worst > CAPACITY) this.flush();
    if (worst > CAPACITY) {
      this.hand(Buffer.from(line));
      return;
    }
    this.used += this.batch.write(line, this.used);
    if (this.used >= BATCH_BYTES) this.flush();
  }

  /**
   * Hands the gathered lines over; with a callback (`logger.flush`), calls it once every line
   * written so far has reached the file descriptor (or can no longer). sonic-boom's own `flush`
   * calls back at once when it has no `minLength`, whatever is still being written.
   */
  flush(callback?: (error?: Error) => void): void {
    if (this.used > 0) {
      // sonic-boom keeps the bytes until they are written: the next batch gets a new buffer.
      this.hand(this.batch.subarray(0, this.used));
      this.batch = Buffer.allocUnsafe(CAPACITY);
      this.used = 0;
    }
    if (callback === undefined) return;
    if (this.isDrained()) callback();
    else this.waiting.push(callback);
  }

  private isDrained(): boolean {
    return this.broken || this.written >= this.handed;
  }

  private settle(): void {
    for (const done of this.waiting.splice(0)) done();
  }

  private hand(bytes: Buffer): void {
    this.handed += bytes.length;
    this.out.write(bytes);
  }
}

let stdoutBatch: LineBatch | undefined;

/**
 * Standard output for a service's request and audit logs, written in batches: under load the
 * lines (one or more per request) are gathered into writes of at least 32 KiB instead of one
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
  const out = pino.destination({ dest: 1, sync: false, contentMode: 'buffer' });
  stdoutBatch = new LineBatch(out as unknown as BufferDestination);
  setInterval(flush, FLUSH_EVERY_MS).unref();
  return stdoutBatch;
}

/**
 * Exits with `code` once every line written to `batchedStdout()` has reached standard output:
 * how a process ends on purpose (a graceful shutdown), since sonic-boom writes asynchronously
 * and no exit hook can finish a write under way.
 */
export async function exitOnceLogged(code: number): Promise<never> {
  const batch = stdoutBatch;
  if (batch) await new Promise<void>((resolve) => batch.flush(() => resolve()));
  process.exit(code);
}
