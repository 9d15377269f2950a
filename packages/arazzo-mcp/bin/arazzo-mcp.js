#!/usr/bin/env node
// npm links this file at install time, before anything is compiled; it runs the
// compiled command, or says how to build it.
import('../dist/bin.js').catch((error) => {
  if (error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes('dist/bin.js')) {
    process.stderr.write(
      'arazzo-mcp is not built yet: run `npm run build` at the repository root.\n',
    );
    process.exit(1);
  }
  throw error;
});
