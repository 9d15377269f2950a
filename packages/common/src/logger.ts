import { createRequire } from 'node:module';
import { type Logger, type LoggerOptions, pino } from 'pino';
import { InvalidArgumentError } from './errors.js';
import { redactDeep, redactUrl } from './redact.js';

export type { Logger } from 'pino';

export interface LoggerSettings {
  /** Service name, added to every line as `name`. */
  name?: string;
  /** pino level; defaults to LOG_LEVEL or `info`. */
  level?: string;
  /**
   * Human-readable output; defaults to `LOG_FORMAT` (`pretty` or `json`, what each service's
   * `--log-format` sets), else true when stdout is a terminal. Needs `pino-pretty`, an optional
   * dependency of this package: where an install left it out, the logger writes JSON lines.
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
  const pretty =
    (settings.pretty ?? prettyByDefault(process.env.LOG_FORMAT)) && prettyPrinterInstalled();
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
        // Colours only where pino-pretty finds them supported (a terminal, NO_COLOR unset):
        // `--log-format pretty` into a file or a pager gets plain text.
        options: { translateTime: 'SYS:HH:MM:ss' },
      },
    });
  }
  return settings.destination ? pino(options, settings.destination) : pino(options);
}

/** The `--log-format` values every service takes (and the `LOG_FORMAT` variable). */
export const LOG_FORMATS = ['pretty', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/**
 * `LOG_FORMAT` when it says, else pretty on a terminal only: a file or a log collector gets JSON
 * lines. The services check a `--log-format` value at start; here an unknown one is ignored.
 */
function prettyByDefault(format: string | undefined): boolean {
  if (format === 'pretty' || format === 'json') return format === 'pretty';
  return process.stdout.isTTY === true;
}

/** The `createLogger` setting a `--log-format` value asks for; none (the default) without one. */
export function logFormatSetting(format: string | undefined): { pretty?: boolean } {
  return format === undefined ? {} : { pretty: format === 'pretty' };
}

/** An optional dependency: `npm install --omit=optional` leaves it out, and then JSON lines it is. */
function prettyPrinterInstalled(): boolean {
  try {
    createRequire(import.meta.url).resolve('pino-pretty');
    return true;
  } catch {
    return false;
  }
}

/**
 * A writer of the line `logger.info({ [key]: record }, message)` would write, byte for byte, made
 * without pino's per-call work (argument handling, a loop over the object's keys, formatters):
 * for a record written once per request, such as an audit trail's. The record is serialized by
 * `serialize`, which must return what `JSON.stringify(record)` does (its default), and is not
 * redacted, so its fields must be ones that never hold a credential.
 * The line is put together from the logger's own pieces (level, time, bindings, message key and
 * prefix, destination), which pino exposes as `pino.symbols` for integrations; a logger with
 * anything that would change the line otherwise (a mixin, a nested key, a stream-write hook, a
 * serializer or redaction for `key`, a multistream destination) is refused.
 */
export function recordLineWriter<T extends object>(
  logger: Logger,
  key: string,
  message: string,
  serialize: (record: T) => string = JSON.stringify,
): (record: T) => void {
  const symbols = pino.symbols;
  const internals = logger as unknown as Record<symbol, unknown>;
  const hooks = internals[symbols.hooksSym] as { streamWrite?: unknown } | undefined;
  const serializers = internals[symbols.serializersSym] as Record<string, unknown>;
  const stringifiers = internals[symbols.stringifiersSym] as Record<string | symbol, unknown>;
  const stream = internals[symbols.streamSym] as pino.DestinationStream &
    Partial<Record<symbol, unknown>>;
  if (
    internals[symbols.mixinSym] ||
    internals[symbols.nestedKeySym] ||
    hooks?.streamWrite ||
    serializers[key] ||
    stringifiers[key] ||
    stringifiers[symbols.wildcardFirstSym] ||
    stream[symbols.needsMetadataGsym] === true
  ) {
    throw new InvalidArgumentError(
      `recordLineWriter cannot reproduce this logger's lines for '${key}'`,
    );
  }
  const level = logger.levels.values.info as number;
  const head = (internals[symbols.lsCacheSym] as Record<number, string>)[level] as string;
  const time = internals[symbols.timeSym] as () => string;
  const prefix = logger.msgPrefix ?? '';
  const messageKey = internals[symbols.messageKeySym] as string;
  const beforeRecord = `${internals[symbols.chindingsSym] as string},${JSON.stringify(key)}:`;
  const afterRecord = `,"${messageKey}":${JSON.stringify(prefix + message)}}\n`;
  return (record) => {
    if (logger.levelVal > level) return;
    stream.write(head + time() + beforeRecord + serialize(record) + afterRecord);
  };
}
