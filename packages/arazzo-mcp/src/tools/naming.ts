/**
 * Tool and parameter names exactly as the reference generator derives them, so clients and
 * gateway scope rules written for it keep working.
 */

/** MCP tool names the gateway and the common clients accept. */
export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

const isUpper = (ch: string | undefined): boolean => ch !== undefined && /^\p{Lu}$/u.test(ch);
const isLower = (ch: string | undefined): boolean => ch !== undefined && /^\p{Ll}$/u.test(ch);
const isDigit = (ch: string | undefined): boolean => ch !== undefined && /^\p{Nd}$/u.test(ch);
const isLetter = (ch: string): boolean => /^\p{L}$/u.test(ch);

/**
 * `listUsers` → `list_users`, `getUserByID` → `get_user_by_id`, `SCIMUsers` → `scim_users`.
 * An upper-case letter starts a new word after a lower-case letter or a digit, or when it is
 * the last capital of an acronym followed by a lower-case letter. Other characters are kept.
 */
export function camelToSnake(id: string): string {
  const chars = [...id];
  let out = '';
  chars.forEach((ch, i) => {
    if (!isUpper(ch)) {
      out += ch;
      return;
    }
    const prev = chars[i - 1];
    const next = chars[i + 1];
    if (i > 0 && (isLower(prev) || isDigit(prev) || (isUpper(prev) && isLower(next)))) out += '_';
    out += ch.toLowerCase();
  });
  return out;
}

/**
 * The reference's argument name for a workflow input: `-`, space and `_` mark a camelCase
 * boundary, other non-alphanumerics are dropped and the first character is lower-cased
 * (`user_name` → `userName`, `X-Api-Key` → `xApiKey`). A boundary seen before the first kept
 * character carries over to the second one (`_user` → `uSer`), as in the reference.
 */
export function toParameterName(inputName: string): string {
  let out = '';
  let capitalizeNext = false;
  for (const ch of inputName) {
    if (ch === '_' || ch === '-' || ch === ' ') {
      capitalizeNext = true;
    } else if (isLetter(ch) || isDigit(ch)) {
      if (out === '') {
        out = ch.toLowerCase();
      } else if (capitalizeNext) {
        out += ch.toUpperCase();
        capitalizeNext = false;
      } else {
        out += ch;
      }
    }
  }
  return out === '' ? 'param' : out;
}
