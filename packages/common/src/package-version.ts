import { existsSync, readFileSync } from 'node:fs';
import { InternalError } from './errors.js';

/**
 * The version of the package holding a module (pass its `import.meta.url`): the `version` of the
 * nearest package.json above it, so a module answers the same from `src` and from `dist`.
 */
export function packageVersion(moduleUrl: string | URL): string {
  for (let folder = new URL('./', moduleUrl); ; folder = new URL('../', folder)) {
    const manifest = new URL('package.json', folder);
    if (existsSync(manifest)) return String(JSON.parse(readFileSync(manifest, 'utf8')).version);
    if (folder.pathname === '/') throw new InternalError(`no package.json above ${moduleUrl}`);
  }
}
