/**
 * The `charset` parameter of a `Content-Type` value, lower-cased and unquoted (RFC 9110
 * §8.3.1), or undefined when there is none.
 */
export function declaredCharset(contentType: string | undefined): string | undefined {
  const match = /;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]*))/i.exec(contentType ?? '');
  return match === null ? undefined : (match[1] ?? match[2] ?? '').toLowerCase();
}

/**
 * Whether a body declared with `contentType` may be read as UTF-8: JSON is UTF-8 (RFC 8259
 * §8.1) and form bodies are UTF-8 percent-encodings (WHATWG URL), so a body declared in another
 * charset is one the server would read differently from what its sender meant, and is refused.
 */
export function isUtf8Body(contentType: string | undefined): boolean {
  const charset = declaredCharset(contentType);
  return charset === undefined || charset === 'utf-8' || charset === 'utf8';
}
