#!/usr/bin/env node
import { runMain } from '@mcp-identity/common';
import { runIdpCli } from './cli.js';

runMain(() => runIdpCli(process.argv.slice(2)), { entryPoint: import.meta.url });
