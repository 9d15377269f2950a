import { createRequire } from 'node:module';
import { type Logger, type LoggerOptions, pino } from 'pino';
import { redactDeep, redactUrl } from './redact.js';

export type { Logger } from 'pino';

export interface LoggerSettings {
  /** Service name, added to every line as `name`. */
  name?: string;
  /** pino level; defaults to LOG_LEVEL or `info`. */
  level?: string;
  /**
   * Human-readable output; defaults to true when stdout is a terminal. Needs the optional
   * `pino-pretty` package: without it the logger writes JSON lines.
   */
  pretty?: boolean;
  /** Where JSON lines go; defaults to stdout. Ignored when pretty. */
  destination?: pino.DestinationStream;
}

interface RequestLike {
  method?: string;
  url?: string;
  hostname?: string;
  ip?: string;
  id?: string | number;
}

/**
 * Creates the pino logger every service uses. Whatever object a caller logs,
 * credential-bearing keys are removed at any depth, and URLs lose the values of
 * credential query parameters, so a careless log call cannot leak a token.
 */
export function createLogger(settings: LoggerSettings = {}): Logger {
  const pretty = (settings.pretty ?? process.stdout.isTTY === true) && prettyPrinterInstalled();
  const options: LoggerOptions = {
    name: settings.name,
    level: settings.level ?? process.env.LOG_LEVEL ?? 'info',
    formatters: {
      log: (object) => redactDeep(object) as Record<string, unknown>,
    },
    serializers: {
      err: (error: unknown) => redactDeep(error),
      req: (request: RequestLike) => ({
        id: request.id,
        method: request.method,
        url: request.url === undefined ? undefined : redactUrl(request.url),
        host: request.hostname,
        remoteAddress: request.ip,
      }),
    },
  };
  if (pretty) {
    return pino({
      ...options,
      transport: {
        target: 'pino-pretty',
        options: { colorize: true, translateTime: 'SYS:HH:MM:ss' },
      },
    });
  }
  return settings.destination ? pino(options, settings.destination) : pino(options);
}

/** pino-pretty is a development convenience, not a runtime dependency of the services. */
function prettyPrinterInstalled(): boolean {
  try {
    createRequire(import.meta.url).resolve('pino-pretty');
    return true;
  } catch {
    return false;
  }
}
