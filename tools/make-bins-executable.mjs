// tsc writes files without the executable bit; npm links each package's "bin"
// at install time, before any build, so the build marks the targets executable
// for `npx mcp-identity` (and the other bins) to run.
import { chmodSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

for (const name of readdirSync('packages')) {
  const manifest = join('packages', name, 'package.json');
  if (!existsSync(manifest)) continue;
  const { bin } = JSON.parse(readFileSync(manifest, 'utf8'));
  for (const target of Object.values(bin ?? {})) {
    const file = join('packages', name, target);
    if (existsSync(file)) chmodSync(file, 0o755);
  }
}
