import { pino } from 'pino';

/**
 * Standard output for the gateway's own logger, written in batches: under load the lines
 * (nearly all of them audit lines, one per MCP request) are joined into writes of at least
 * 4 KiB instead of one write per few lines, and a quiet gateway's lines go out within 100 ms.
 * pino flushes what is buffered when the process exits.
 */
export function batchedStdout(): pino.DestinationStream {
  return pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: 100 });
}
