#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { hashSecret, runMain } from '@mcp-identity/common';
import { startGateway } from './gateway.js';

const USAGE = `Usage:
  gateway serve --config <file.toml> [--data-dir <dir>]
  gateway hash-password            (reads a password from stdin, prints its hash for the config)
`;

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
    options: { config: { type: 'string', short: 'c' }, 'data-dir': { type: 'string' } },
    strict: true,
  });
  const options: Parameters<typeof startGateway>[0] = { handleSignals: true, guardProcess: true };
  if (values.config) options.configFile = values.config;
  if (values['data-dir']) options.dataDir = values['data-dir'];
  await startGateway(options);
  return undefined;
});
