#!/usr/bin/env node
// npm links this file at install time, before anything is compiled: see common's run-compiled.js.
import { runCompiled } from '@mcp-identity/common/run-compiled';

runCompiled('mcp-identity-idp', new URL('../dist/bin.js', import.meta.url));
