import { readFileSync } from 'node:fs';
import { packageVersion } from '@mcp-identity/common';
import { describe, expect, it } from 'vitest';

const manifestVersion = (path: string) =>
  JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8')).version;

describe('packageVersion', () => {
  it('reads the nearest package.json above a module, however deep the module is', () => {
    expect(packageVersion(import.meta.url)).toBe(manifestVersion('../package.json'));
    expect(packageVersion(new URL('../src/testing/index.ts', import.meta.url))).toBe(
      manifestVersion('../package.json'),
    );
    expect(packageVersion(new URL('../../arazzo-mcp/src/mcp/server.ts', import.meta.url))).toBe(
      manifestVersion('../../arazzo-mcp/package.json'),
    );
  });

  it('fails with a message when no package.json is above the module', () => {
    expect(() => packageVersion('file:///nowhere.js')).toThrow('no package.json above');
  });
});
