import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const pkg = (name: string, entry = 'index.ts') =>
  fileURLToPath(new URL(`./packages/${name}/src/${entry}`, import.meta.url));

// Tests import each package by its public name; these aliases point them at the
// TypeScript sources so a test run never depends on a stale build.
export default defineConfig({
  resolve: {
    alias: [
      { find: '@mcp-identity/common/testing', replacement: pkg('common', 'testing/index.ts') },
      ...['common', 'oauth', 'arazzo', 'arazzo-mcp', 'gateway', 'idp', 'cli'].map((name) => ({
        find: new RegExp(`^@mcp-identity/${name}$`),
        replacement: pkg(name),
      })),
    ],
  },
  test: {
    include: [
      'packages/*/test/**/*.test.ts',
      'workflows/*/test/**/*.test.ts',
      'bench/test/**/*.test.ts',
    ],
    reporters: ['default', './tools/summary-reporter.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});
