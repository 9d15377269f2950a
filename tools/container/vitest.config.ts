import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import root from '../../vitest.config.js';

// `npm run test:container`: the container tests alone, outside `npm test`'s include (they build
// images with podman). The root config's aliases point imports at the TypeScript sources.
export default defineConfig({
  ...root,
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    ...root.test,
    include: ['tools/container/test/**/*.test.ts'],
    testTimeout: 120_000,
  },
});
