import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The directory npm runs a project's scripts in, found from `cwd` as npm finds
 * it: the nearest ancestor holding a package.json, or above it the workspace
 * root (a package.json with `workspaces`). Relative data directories resolve
 * against it, so a helper run from a subdirectory finds the stack `npm start`
 * made. Without any package.json, `cwd` itself.
 */
export function projectRoot(cwd: string): string {
  const nearest = ancestors(cwd).find((dir) => existsSync(join(dir, 'package.json')));
  if (nearest === undefined) return cwd;
  return ancestors(nearest).find(isWorkspaceRoot) ?? nearest;
}

function ancestors(dir: string): string[] {
  const chain = [dir];
  for (let parent = dirname(dir); parent !== chain.at(-1); parent = dirname(parent)) {
    chain.push(parent);
  }
  return chain;
}

function isWorkspaceRoot(dir: string): boolean {
  try {
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
      workspaces?: unknown;
    };
    return manifest.workspaces !== undefined;
  } catch {
    return false;
  }
}
