#!/usr/bin/env node
import { text } from 'node:stream/consumers';
import { runMain } from '@mcp-identity/common';
import { runCli } from './cli/run.js';

runMain(
  () =>
    runCli(process.argv.slice(2), {
      out: (line) => process.stdout.write(`${line}\n`),
      err: (line) => process.stderr.write(`${line}\n`),
      env: process.env,
      readStdin: () => text(process.stdin),
    }),
  { entryPoint: import.meta.url },
);
