#!/usr/bin/env node
import { availableParallelism } from 'node:os';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import {
  ConfigError,
  createLogger,
  hashSecret,
  LOG_FORMATS,
  runMain,
  startTracing,
} from '@mcp-identity/common';
import { loadConfigFile } from './config.js';
import { migrateToPostgres } from './control-plane/migrate.js';
import type { GatewayOptions } from './gateway.js';
import { serveGateway } from './workers.js';

const USAGE = `Usage: mcp-identity-gateway <command>   (or: mcp-identity gateway <command>)
  serve --config <file.toml> [--data-dir <dir>] [--database-url <postgres://...>]
        [--workers <n>]    (database URL also from GATEWAY_DATABASE_URL; workers default
                            to one per core, 1 = a single process)
        [--log-format pretty|json]
                           (also LOG_FORMAT; default pretty on a terminal, else JSON lines)
  validate --config <file.toml> [--database-url <postgres://...>]
                           (checks the file as serve would, names every problem by its
                            key, starts nothing; exit 0 when valid, 2 otherwise)
  hash-password            (reads a password from stdin, prints its hash for the config)
  migrate --data-dir <dir> [--database-url <postgres://...>]
                           (copies a SQLite data directory's proxies and generated admin
                            into PostgreSQL; safe to run again)
  --version                (prints the version)
`;

function workerCount(flag: string | undefined): number {
  if (flag === undefined) return availableParallelism();
  const count = Number(flag);
  if (!Number.isInteger(count) || count < 1 || count > 256) {
    throw new ConfigError([
      { key: 'workers', source: 'flag --workers', message: 'must be a whole number from 1 to 256' },
    ]);
  }
  return count;
}

/** parseArgs whose refusals (unknown flag, missing value) are a ConfigError, exit 2, as in loadConfig. */
function parseFlags<const O extends NonNullable<ParseArgsConfig['options']>>(
  args: string[],
  options: O,
) {
  try {
    return parseArgs({ args, options, strict: true }).values;
  } catch (error) {
    throw new ConfigError([
      { key: 'arguments', source: 'command line', message: (error as Error).message },
    ]);
  }
}

async function migrate(args: string[]): Promise<number> {
  const values = parseFlags(args, {
    'data-dir': { type: 'string' },
    'database-url': { type: 'string' },
  });
  const databaseUrl = values['database-url'] ?? process.env.GATEWAY_DATABASE_URL;
  if (!values['data-dir'] || !databaseUrl) {
    process.stderr.write(`${USAGE}migrate needs --data-dir and a database URL\n`);
    return 2;
  }
  const logger = createLogger({ name: 'gateway', level: 'warn' });
  const report = await migrateToPostgres(values['data-dir'], databaseUrl, logger);
  process.stdout.write(
    `copied ${report.copied.length} MCP prox${report.copied.length === 1 ? 'y' : 'ies'}` +
      `${report.copied.length ? ` (${report.copied.join(', ')})` : ''}; ` +
      `skipped ${report.skipped.length} already in the database or colliding with one there` +
      `${report.skipped.length ? ` (${report.skipped.join(', ')})` : ''}; ` +
      `generated admin: ${{ copied: 'copied', kept: 'not copied, the database has users', none: 'none in the data directory' }[report.admin]}\n`,
  );
  return 0;
}

/**
 * `validate`: the checks `serve` makes of its file and of the environment it reads with it
 * (`GATEWAY_*`), a ConfigError (exit 2) naming every problem, and nothing else.
 */
function validate(args: string[]): number {
  const values = parseFlags(args, {
    config: { type: 'string', short: 'c' },
    'database-url': { type: 'string' },
  });
  if (!values.config) {
    process.stderr.write(`${USAGE}validate needs --config\n`);
    return 2;
  }
  const databaseUrl = values['database-url'] ?? process.env.GATEWAY_DATABASE_URL;
  loadConfigFile(values.config, databaseUrl ? { databaseUrl } : {});
  process.stdout.write(`${values.config}: valid\n`);
  return 0;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

runMain(
  async () => {
    const [command, ...rest] = process.argv.slice(2);
    if (command === 'hash-password') {
      const password = await readStdin();
      if (!password) {
        process.stderr.write('no password on stdin\n');
        return 2;
      }
      process.stdout.write(`${await hashSecret(password)}\n`);
      return 0;
    }
    if (command === 'migrate') return migrate(rest);
    if (command === 'validate') return validate(rest);
    if (command !== 'serve') {
      process.stderr.write(USAGE);
      return command === undefined || command === '--help' || command === 'help' ? 0 : 2;
    }
    const values = parseFlags(rest, {
      config: { type: 'string', short: 'c' },
      'data-dir': { type: 'string' },
      'database-url': { type: 'string' },
      workers: { type: 'string' },
      'log-format': { type: 'string' },
    });
    const logFormat = values['log-format'];
    if (logFormat !== undefined) {
      if (!(LOG_FORMATS as readonly string[]).includes(logFormat)) {
        throw new ConfigError([
          { key: 'log-format', source: 'flag --log-format', message: 'must be pretty or json' },
        ]);
      }
      // The variable every logger reads (common's createLogger), the workers' included: they
      // inherit the primary's environment.
      process.env.LOG_FORMAT = logFormat;
    }
    const options: GatewayOptions = { handleSignals: true, guardProcess: true };
    if (values.config) options.configFile = values.config;
    if (values['data-dir']) options.dataDir = values['data-dir'];
    const databaseUrl = values['database-url'] ?? process.env.GATEWAY_DATABASE_URL;
    if (databaseUrl) options.databaseUrl = databaseUrl;
    // In the primary and in each worker (which runs this file again): the OTEL_* environment.
    await startTracing('mcp-identity-gateway');
    await serveGateway(options, workerCount(values.workers));
    return undefined;
  },
  { entryPoint: import.meta.url },
);
