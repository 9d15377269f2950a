import { accessSync, constants, readdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';

const isExecutable = (file: string) => {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/** The absolute path of `name` on PATH or in the system binary directories, if installed. */
export function findExecutable(name: string): string | undefined {
  const dirs = [
    ...(process.env.PATH ?? '').split(delimiter),
    '/usr/local/sbin',
    '/usr/sbin',
    '/sbin',
  ];
  return dirs
    .filter((dir) => dir.startsWith('/'))
    .map((dir) => join(dir, name))
    .find(isExecutable);
}

/** Debian installs PostgreSQL's server binaries off PATH, one directory per major version. */
export function postgresBinDir(): string | undefined {
  const fromEnv = process.env.POSTGRES_BIN_DIR;
  if (fromEnv) return isExecutable(join(fromEnv, 'postgres')) ? fromEnv : undefined;
  let versions: string[] = [];
  try {
    versions = readdirSync('/usr/lib/postgresql').filter((v) => /^\d+$/.test(v));
  } catch {
    // not installed the Debian way; fall back to PATH
  }
  versions.sort((a, b) => Number(b) - Number(a));
  for (const version of versions) {
    const bin = `/usr/lib/postgresql/${version}/bin`;
    if (isExecutable(join(bin, 'postgres')) && isExecutable(join(bin, 'initdb'))) return bin;
  }
  const onPath = findExecutable('postgres');
  return onPath && findExecutable('initdb') ? onPath.slice(0, onPath.lastIndexOf('/')) : undefined;
}
