#!/usr/bin/env node
import { runMain } from '@mcp-identity/common';
import { runCommand } from './commands.js';

runMain(() => runCommand(process.argv.slice(2), { out: process.stdout, err: process.stderr }), {
  entryPoint: import.meta.url,
});
