import { McpIdentityError, SCIM_ERROR_SCHEMA, scimErrorBody } from '@mcp-identity/common';

export const SCIM_CONTENT_TYPE = 'application/scim+json';
/** The auth layer (WSO2's valve) answers with plain JSON and a numeric `status`. */
export const VALVE_CONTENT_TYPE = 'application/json;charset=UTF-8';

export const FORBIDDEN_DETAIL =
  'Operation is not permitted. You do not have permissions to make this request.';
export const UNAUTHORIZED_DETAIL =
  'Authorization failure. Authorization information was invalid or missing from your request.';

/** An error raised inside SCIM processing; encoded as charon does (string `status`). */
export class ScimError extends McpIdentityError {
  readonly code = 'ERR_SCIM';

  constructor(
    readonly status: number,
    readonly detail: string,
    readonly scimType?: string,
  ) {
    super(detail);
  }

  toBody(): Record<string, unknown> {
    return scimErrorBody(this.status, this.detail, this.scimType || undefined);
  }
}

/** A body produced by the auth valve (numeric `status`, no `scimType`). */
export function valveErrorBody(status: 401 | 403): Record<string, unknown> {
  return {
    schemas: [SCIM_ERROR_SCHEMA],
    detail: status === 401 ? UNAUTHORIZED_DETAIL : FORBIDDEN_DETAIL,
    status,
  };
}

export const badRequest = (detail: string, scimType = 'invalidValue') =>
  new ScimError(400, detail, scimType);
export const invalidSyntax = (detail: string) => new ScimError(400, detail, 'invalidSyntax');
export const notFound = (detail: string) => new ScimError(404, detail);
/** RFC 7644 §3.12: a 409 for a taken unique value says `uniqueness` (WSO2 omits it). */
export const conflict = (detail: string) => new ScimError(409, detail, 'uniqueness');
export const forbidden = () => new ScimError(403, FORBIDDEN_DETAIL);
