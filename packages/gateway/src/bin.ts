#!/usr/bin/env node
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { ConfigError, hashSecret, runMain } from '@mcp-identity/common';
import type { GatewayOptions } from './gateway.js';
import { serveGateway } from './workers.js';

const USAGE = `Usage:
  gateway serve --config <file.toml> [--data-dir <dir>] [--database-url <postgres://...>]
                [--workers <n>]   (database URL also from GATEWAY_DATABASE_URL; workers default
                                  to one per core, 1 = a single process)
  gateway hash-password            (reads a password from stdin, prints its hash for the config)
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

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

runMain(async () => {
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
  if (command !== 'serve') {
    process.stderr.write(USAGE);
    return command === undefined || command === '--help' || command === 'help' ? 0 : 2;
  }
  const { values } = parseArgs({
    args: rest,
    options: {
      config: { type: 'string', short: 'c' },
      'data-dir': { type: 'string' },
      'database-url': { type: 'string' },
      workers: { type: 'string' },
    },
    strict: true,
  });
  const options: GatewayOptions = { handleSignals: true };
  if (values.config) options.configFile = values.config;
  if (values['data-dir']) options.dataDir = values['data-dir'];
  const databaseUrl = values['database-url'] ?? process.env.GATEWAY_DATABASE_URL;
  if (databaseUrl) options.databaseUrl = databaseUrl;
  await serveGateway(options, workerCount(values.workers));
  return undefined;
});
