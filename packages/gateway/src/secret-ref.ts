import { readFileSync } from 'node:fs';
import path from 'node:path';

export type SecretResolution = { ok: true; value: string } | { ok: false; problem: string };

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A header value may not carry control characters (RFC 9110 §5.5). */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]+$/;

/**
 * Reads a secret reference: `env:NAME` (an environment variable) or `file:/abs/path` (the
 * file's first line, trimmed). The value is never part of a message.
 */
export function resolveSecretRef(ref: string): SecretResolution {
  let value: string | undefined;
  if (ref.startsWith('env:')) {
    const name = ref.slice(4);
    if (!ENV_NAME.test(name)) return { ok: false, problem: 'env: needs a variable name' };
    value = process.env[name];
    if (value === undefined)
      return { ok: false, problem: `environment variable ${name} is not set` };
  } else if (ref.startsWith('file:')) {
    const file = ref.slice(5);
    if (!path.isAbsolute(file)) return { ok: false, problem: 'file: needs an absolute path' };
    try {
      value = readFileSync(file, 'utf8').split(/\r?\n/, 1)[0];
    } catch {
      return { ok: false, problem: `cannot read ${file}` };
    }
  } else {
    return { ok: false, problem: 'must be env:NAME or file:/absolute/path' };
  }
  value = value?.trim() ?? '';
  if (value === '') return { ok: false, problem: 'the secret is empty' };
  if (!HEADER_VALUE.test(value))
    return { ok: false, problem: 'the secret is not a valid header value' };
  return { ok: true, value };
}

/** Why a reference is unusable (`resolve`: also read the secret), or undefined. */
export function secretRefProblem(ref: string, resolve: boolean): string | undefined {
  if (!resolve) {
    if (/^env:[A-Za-z_][A-Za-z0-9_]*$/.test(ref)) return undefined;
    if (ref.startsWith('file:') && path.isAbsolute(ref.slice(5))) return undefined;
    return 'must be env:NAME or file:/absolute/path';
  }
  const resolved = resolveSecretRef(ref);
  return resolved.ok ? undefined : resolved.problem;
}
