import { readFileSync } from 'node:fs';
import { ConfigError } from '@mcp-identity/common';
import { REQUIRED_HEADER_VALUE_ENV, type RequiredHeader } from '../http/required-header.js';

const REQUIRE_HEADER_SOURCE = 'flag --require-header or env var ARAZZO_MCP_REQUIRE_HEADER';
const REQUIRE_HEADER_FILE_SOURCE =
  'flag --require-header-file or env var ARAZZO_MCP_REQUIRE_HEADER_FILE';

/**
 * The header name with its expected value: the first line of the file (trimmed) when one is
 * given, else the environment variable. A missing, unreadable or empty source is a
 * configuration error, so the server never starts open by mistake.
 */
export function resolveRequiredHeader(
  values: { requireHeader?: string; requireHeaderFile?: string; transport: string },
  env: Record<string, string | undefined>,
): RequiredHeader | undefined {
  const problem = (key: string, source: string, message: string) =>
    new ConfigError([{ key, source, message }]);
  const name = values.requireHeader;
  if (name === undefined) {
    if (values.requireHeaderFile === undefined) return undefined;
    throw problem('requireHeaderFile', REQUIRE_HEADER_FILE_SOURCE, 'needs --require-header');
  }
  if (values.transport === 'stdio') {
    throw problem('requireHeader', REQUIRE_HEADER_SOURCE, 'needs --transport http');
  }
  if (values.requireHeaderFile === undefined) {
    const value = env[REQUIRED_HEADER_VALUE_ENV]?.trim();
    if (!value) {
      throw problem(
        'requireHeader',
        `env var ${REQUIRED_HEADER_VALUE_ENV}`,
        'is not set or empty: give the header value there or in --require-header-file',
      );
    }
    return { name, value };
  }
  let text: string;
  try {
    text = readFileSync(values.requireHeaderFile, 'utf8');
  } catch (error) {
    throw problem(
      'requireHeaderFile',
      REQUIRE_HEADER_FILE_SOURCE,
      `cannot read ${values.requireHeaderFile} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    );
  }
  const value = text.split(/\r?\n/, 1)[0]?.trim();
  if (!value) {
    throw problem(
      'requireHeaderFile',
      REQUIRE_HEADER_FILE_SOURCE,
      `the first line of ${values.requireHeaderFile} is empty`,
    );
  }
  return { name, value };
}
