/** Replacement text for every value removed from logs. */
export const REDACTED = '[REDACTED]';

// Key names whose values are credentials wherever they appear. Matched on the
// lower-cased name with '-' and '_' removed, so `client_secret`, `clientSecret`
// and `Client-Secret` are all caught.
const SENSITIVE_NAME =
  /(authorization|cookie|password|passwd|secret|token|apikey|credential|codeverifier|assertion)/;
const SENSITIVE_EXACT = new Set(['code', 'authcode', 'authorizationcode', 'pwd']);
// Node and library error codes (ECONNREFUSED, FST_ERR_VALIDATION) are diagnostics,
// not OAuth codes; they are kept so failures stay debuggable.
const ERROR_CODE = /^[A-Z][A-Z0-9_]*$/;

// Log calls name the same few keys over and over (`req`, `res`, `responseTime`, `clientId`):
// their verdicts are remembered, up to a bound, since keys may also come from request data.
const KNOWN_KEYS_MAX = 1024;
const knownKeys = new Map<string, boolean>();

export function isSensitiveKey(key: string): boolean {
  let sensitive = knownKeys.get(key);
  if (sensitive === undefined) {
    const name = key.toLowerCase().replace(/[-_]/g, '');
    sensitive = SENSITIVE_EXACT.has(name) || SENSITIVE_NAME.test(name);
    if (knownKeys.size < KNOWN_KEYS_MAX) knownKeys.set(key, sensitive);
  }
  return sensitive;
}

function redactValue(key: string, value: unknown): boolean {
  if (!isSensitiveKey(key)) return false;
  if (key.toLowerCase() === 'code' && typeof value === 'string' && ERROR_CODE.test(value)) {
    return false;
  }
  return value !== undefined && value !== null;
}

/** Strips credentials from the query string of a URL or path, keeping its shape. */
export function redactUrl(url: string): string {
  const queryStart = url.indexOf('?');
  if (queryStart < 0) return url;
  const params = new URLSearchParams(url.slice(queryStart + 1));
  let changed = false;
  for (const key of new Set(params.keys())) {
    if (isSensitiveKey(key)) {
      params.set(key, REDACTED);
      changed = true;
    }
  }
  return changed ? `${url.slice(0, queryStart)}?${params.toString()}` : url;
}

/**
 * Returns a copy of `value` in which every credential-bearing property, at any
 * depth, is replaced by REDACTED. Cycles and very deep structures are cut off
 * rather than followed.
 */
export function redactDeep(value: unknown, depth = 0, seen?: WeakSet<object>): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (seen === undefined) {
    if (isFlatAndClean(value)) return value;
    seen = new WeakSet<object>();
  }
  if (depth > 12 || seen.has(value)) return '[Truncated]';
  seen.add(value);
  if (!isCopied(value)) return value;
  if (Array.isArray(value)) return value.map((item) => redactDeep(item, depth + 1, seen));
  if (value instanceof Error) return redactError(value, depth, seen);
  const entries = isHeaders(value) ? [...value.entries()] : Object.entries(value);
  const out: Record<string, unknown> = {};
  for (const [key, item] of entries) {
    out[key] = redactValue(key, item) ? REDACTED : redactDeep(item, depth + 1, seen);
  }
  return out;
}

function redactError(error: Error, depth: number, seen: WeakSet<object>): unknown {
  const out: Record<string, unknown> = { type: error.name, message: error.message };
  if (error.stack) out.stack = error.stack;
  for (const [key, item] of Object.entries(error)) {
    out[key] = redactValue(key, item) ? REDACTED : redactDeep(item, depth + 1, seen);
  }
  if (error.cause !== undefined) out.cause = redactDeep(error.cause, depth + 1, seen);
  return out;
}

/**
 * A plain object whose keys are all harmless and whose values are primitives or objects that
 * `redactDeep` passes through as they are (class instances such as a request): the copy
 * `redactDeep` would make holds the same entries, so the object itself serves. Most log calls
 * (every request line) log such an object.
 */
function isFlatAndClean(value: object): boolean {
  if (!isPlainObject(value)) return false;
  for (const key in value) {
    if (!Object.hasOwn(value, key)) return false;
    const item = (value as Record<string, unknown>)[key];
    if (redactValue(key, item)) return false;
    if (item !== null && typeof item === 'object' && isCopied(item)) return false;
  }
  return true;
}

/**
 * Whether `redactDeep` copies an object (arrays, errors, plain objects, `Headers`) rather than
 * passing it through as it is (class instances such as a request).
 */
function isCopied(value: object): boolean {
  return Array.isArray(value) || value instanceof Error || isPlainObject(value) || isHeaders(value);
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function isHeaders(value: object): value is Headers {
  return typeof Headers !== 'undefined' && value instanceof Headers;
}
