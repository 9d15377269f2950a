import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../logger.js';

/** An `info` JSON logger that hands each line it writes, parsed, to `onLine`. */
export function lineLogger(onLine: (line: Record<string, unknown>) => void): Logger {
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      for (const line of String(chunk).split('\n')) if (line) onLine(JSON.parse(line));
      callback();
    },
  });
  return createLogger({ level: 'info', pretty: false, destination });
}
