/**
 * Python `repr()` of JSON-like values, as the reference server prints workflow outputs
 * (`f"Workflow Success. Outputs: {result.outputs}"` in Python 3).
 *
 * JavaScript cannot tell the JSON number `10.0` from `10`, so integer-valued numbers print as
 * Python ints; every other number prints as Python's shortest float repr.
 */
export function pythonRepr(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'string') return pythonStrRepr(value);
  if (typeof value === 'number') return pythonNumberRepr(value);
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Uint8Array) return pythonBytesRepr(value);
  if (Array.isArray(value)) return listRepr(value);
  if (typeof value === 'object') return objectRepr(value as Record<string, unknown>);
  return pythonStrRepr(String(value));
}

// Built by concatenation: a tool result is printed on every call, and map/join with an array
// of entries per object cost several times as much.
function listRepr(items: readonly unknown[]): string {
  let out = '[';
  for (let i = 0; i < items.length; i++) {
    if (i > 0) out += ', ';
    out += pythonRepr(items[i]);
  }
  return `${out}]`;
}

function objectRepr(object: Record<string, unknown>): string {
  let out = '{';
  let first = true;
  for (const key of Object.keys(object)) {
    if (!first) out += ', ';
    first = false;
    out += `${pythonStrRepr(key)}: ${pythonRepr(object[key])}`;
  }
  return `${out}}`;
}

/** A dict from ordered entries, so callers can keep an order JavaScript objects would change. */
export function pythonDictRepr(entries: ReadonlyArray<readonly [string, unknown]>): string {
  let out = '{';
  for (let i = 0; i < entries.length; i++) {
    const [key, item] = entries[i]!;
    if (i > 0) out += ', ';
    out += `${pythonStrRepr(key)}: ${pythonRepr(item)}`;
  }
  return `${out}}`;
}

/** Python prefers single quotes and switches to double quotes only to avoid escaping a `'`. */
function chooseQuote(text: string): string {
  return text.includes("'") && !text.includes('"') ? '"' : "'";
}

const NAMED_ESCAPES: Readonly<Record<string, string>> = { '\t': '\\t', '\n': '\\n', '\r': '\\r' };

// Python's str.isprintable(): everything but "Other" (Cc, Cf, Cs, Co, Cn) and "Separator"
// (Zl, Zp, Zs) characters, except the ASCII space.
const NOT_PRINTABLE = /^[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]$/u;

// Printable ASCII but the quotes and the backslash: Python prints such text as it is.
const PLAIN = /^[ !#-&(-[\]-~]*$/;

export function pythonStrRepr(text: string): string {
  if (PLAIN.test(text)) return `'${text}'`;
  const quote = chooseQuote(text);
  let out = quote;
  // for...of walks code points and yields lone surrogates as themselves, as Python sees them.
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (ch === quote || ch === '\\') out += `\\${ch}`;
    else if (NAMED_ESCAPES[ch] !== undefined) out += NAMED_ESCAPES[ch];
    else if (code < 0x20 || code === 0x7f) out += hexEscape('x', code, 2);
    else if (code < 0x7f || (ch !== ' ' && !NOT_PRINTABLE.test(ch))) out += ch;
    else if (code <= 0xff) out += hexEscape('x', code, 2);
    else if (code <= 0xffff) out += hexEscape('u', code, 4);
    else out += hexEscape('U', code, 8);
  }
  return out + quote;
}

function pythonBytesRepr(bytes: Uint8Array): string {
  const quote = chooseQuote(Buffer.from(bytes).toString('latin1'));
  let out = `b${quote}`;
  for (const code of bytes) {
    const ch = String.fromCharCode(code);
    if (ch === quote || ch === '\\') out += `\\${ch}`;
    else if (NAMED_ESCAPES[ch] !== undefined) out += NAMED_ESCAPES[ch];
    else if (code < 0x20 || code >= 0x7f) out += hexEscape('x', code, 2);
    else out += ch;
  }
  return out + quote;
}

function hexEscape(kind: 'x' | 'u' | 'U', code: number, width: number): string {
  return `\\${kind}${code.toString(16).padStart(width, '0')}`;
}

function pythonNumberRepr(value: number): string {
  if (Number.isNaN(value)) return 'nan';
  if (!Number.isFinite(value)) return value > 0 ? 'inf' : '-inf';
  // Below 2^53 String() prints every digit; above, it may switch to exponent notation.
  if (Number.isSafeInteger(value)) return String(value);
  if (Number.isInteger(value)) return BigInt(value).toString();
  return pythonFloatRepr(value);
}

/**
 * Python's repr(float): the shortest round-tripping digits (which JavaScript computes too),
 * in positional notation unless the decimal exponent is below -4 or above 16.
 */
function pythonFloatRepr(value: number): string {
  const sign = value < 0 ? '-' : '';
  const [mantissa = '', exponentText = '0'] = Math.abs(value).toExponential().split('e');
  const digits = mantissa.replace('.', '');
  const exponent = Number(exponentText);
  const pointPosition = exponent + 1;
  if (pointPosition <= -4 || pointPosition > 16) {
    const fraction = digits.length > 1 ? `.${digits.slice(1)}` : '';
    const expSign = exponent < 0 ? '-' : '+';
    return `${sign}${digits[0]}${fraction}e${expSign}${String(Math.abs(exponent)).padStart(2, '0')}`;
  }
  if (pointPosition <= 0) return `${sign}0.${'0'.repeat(-pointPosition)}${digits}`;
  if (pointPosition >= digits.length) {
    return `${sign}${digits}${'0'.repeat(pointPosition - digits.length)}.0`;
  }
  return `${sign}${digits.slice(0, pointPosition)}.${digits.slice(pointPosition)}`;
}
