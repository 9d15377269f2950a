import { closeSync, fstatSync, openSync, readSync, realpathSync } from 'node:fs';
import path from 'node:path';

export type SecretResolution = { ok: true; value: string } | { ok: false; problem: string };

/**
 * What a proxy's `upstream.auth.secretRef` may read, as the operator configured it
 * (`[secrets]`): a management API administrator chooses the reference, not what it can reach,
 * so `env:GATEWAY_DATABASE_URL` or `file:/etc/passwd` cannot be sent to an upstream of theirs.
 */
export interface SecretAccess {
  /** `env:NAME` only for names starting with one of these. */
  envPrefixes: readonly string[];
  /** `file:` only for files below this directory, symlinks and `..` resolved; none without it. */
  directory?: string;
}

/** The default allow-list: variables named for the purpose, and no files. */
export const DEFAULT_SECRET_ACCESS: SecretAccess = { envPrefixes: ['GATEWAY_SECRET_'] };

export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A header value may not carry control characters (RFC 9110 §5.5). */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]+$/;
/** Only the first line is read: a secret file is a line, not a document. */
const MAX_SECRET_FILE_BYTES = 64 * 1024;

const fail = (problem: string): SecretResolution => ({ ok: false, problem });

/** Why `name` may not be read, or undefined. */
function envProblem(name: string, access: SecretAccess): string | undefined {
  if (!ENV_NAME.test(name)) return 'env: needs a variable name';
  if (access.envPrefixes.some((prefix) => name.startsWith(prefix))) return undefined;
  const allowed = access.envPrefixes.length
    ? `only variables starting with ${access.envPrefixes.join(', ')}`
    : 'no environment variables';
  return `env:${name} is not allowed: the gateway reads ${allowed} (secrets.env_prefixes)`;
}

/** Whether `file` names something below `directory` (both already absolute and normalised). */
function isBelow(file: string, directory: string): boolean {
  const relative = path.relative(directory, file);
  return (
    relative !== '' &&
    relative !== '..' &&
    !relative.startsWith(`..${path.sep}`) &&
    !path.isAbsolute(relative)
  );
}

/** Why `file` may not be read as spelt (no file system access), or undefined. */
function fileProblem(file: string, access: SecretAccess): string | undefined {
  if (!path.isAbsolute(file)) return 'file: needs an absolute path';
  if (access.directory === undefined) {
    return 'file: is not allowed: no secrets directory is configured (secrets.directory or GATEWAY_SECRETS_DIR)';
  }
  if (!isBelow(path.resolve(file), access.directory)) {
    return `${file} is not allowed: the gateway reads files only below ${access.directory} (secrets.directory)`;
  }
  return undefined;
}

/** The first line of an allowed file, once its real path is known to be below the directory. */
function readSecretFile(file: string, directory: string): SecretResolution {
  let real: string;
  let realDirectory: string;
  try {
    real = realpathSync(file);
    realDirectory = realpathSync(directory);
  } catch {
    return fail(`cannot read ${file}`);
  }
  if (!isBelow(real, realDirectory)) {
    return fail(`${file} is not allowed: it leads outside ${directory} (secrets.directory)`);
  }
  let fd: number | undefined;
  try {
    fd = openSync(real, 'r');
    if (!fstatSync(fd).isFile()) return fail(`${file} is not a regular file`);
    const buffer = Buffer.alloc(MAX_SECRET_FILE_BYTES);
    const length = readSync(fd, buffer, 0, buffer.length, 0);
    return { ok: true, value: buffer.toString('utf8', 0, length).split(/\r?\n/, 1)[0] ?? '' };
  } catch {
    return fail(`cannot read ${file}`);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Reads a secret reference: `env:NAME` (an environment variable) or `file:/abs/path` (the
 * file's first line, trimmed), each only where `access` allows. The value is never part of a
 * message.
 */
export function resolveSecretRef(ref: string, access: SecretAccess): SecretResolution {
  let read: SecretResolution;
  if (ref.startsWith('env:')) {
    const name = ref.slice(4);
    const problem = envProblem(name, access);
    if (problem) return fail(problem);
    const value = process.env[name];
    if (value === undefined) return fail(`environment variable ${name} is not set`);
    read = { ok: true, value };
  } else if (ref.startsWith('file:')) {
    const file = ref.slice(5);
    const problem = fileProblem(file, access);
    if (problem) return fail(problem);
    read = readSecretFile(file, access.directory as string);
    if (!read.ok) return read;
  } else {
    return fail('must be env:NAME or file:/absolute/path');
  }
  const value = read.value.trim();
  if (value === '') return fail('the secret is empty');
  if (!HEADER_VALUE.test(value)) return fail('the secret is not a valid header value');
  return { ok: true, value };
}

/** Why a reference is unusable (`resolve`: also read the secret), or undefined. */
export function secretRefProblem(
  ref: string,
  access: SecretAccess,
  resolve: boolean,
): string | undefined {
  if (resolve) {
    const resolved = resolveSecretRef(ref, access);
    return resolved.ok ? undefined : resolved.problem;
  }
  if (ref.startsWith('env:')) return envProblem(ref.slice(4), access);
  if (ref.startsWith('file:')) return fileProblem(ref.slice(5), access);
  return 'must be env:NAME or file:/absolute/path';
}
