import { McpIdentityError } from '@mcp-identity/common';

/** A request the library refuses before any OAuth semantics apply (e.g. an unusable Host header). */
export class BadRequestError extends McpIdentityError {
  readonly code = 'ERR_BAD_REQUEST';
  readonly statusCode = 400;
}
