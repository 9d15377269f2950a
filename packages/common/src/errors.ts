import type { FastifyReply } from 'fastify';

/** RFC 6749 §5.2 error body, never cached (it may follow a token request). */
export function oauthError(
  reply: FastifyReply,
  status: number,
  error: string,
  description?: string,
): FastifyReply {
  const body: { error: string; error_description?: string } = { error };
  if (description !== undefined) body.error_description = description;
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .header('content-type', 'application/json; charset=utf-8')
    .send(body);
}

export const SCIM_ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

export interface ScimErrorBody {
  schemas: [typeof SCIM_ERROR_SCHEMA];
  detail: string;
  status: string;
  scimType?: string;
}

/** RFC 7644 §3.12 error body; `status` is a string there, as WSO2's SCIM layer sends it. */
export function scimErrorBody(status: number, detail: string, scimType?: string): ScimErrorBody {
  const body: ScimErrorBody = { schemas: [SCIM_ERROR_SCHEMA], detail, status: String(status) };
  if (scimType !== undefined) body.scimType = scimType;
  return body;
}

export function scimError(
  reply: FastifyReply,
  status: number,
  detail: string,
  scimType?: string,
): FastifyReply {
  return reply
    .code(status)
    .header('content-type', 'application/scim+json')
    .send(scimErrorBody(status, detail, scimType));
}

/** The gateway management API's error shape: `{status: "error", message}`. */
export function gatewayError(reply: FastifyReply, status: number, message: string): FastifyReply {
  return reply.code(status).send({ status: 'error', message });
}

export type JsonRpcId = string | number | null;

export interface JsonRpcErrorResponse {
  jsonrpc: '2.0';
  id: JsonRpcId;
  error: { code: number; message: string; data?: unknown };
}

/** A JSON-RPC 2.0 error response object (the caller chooses the HTTP status). */
export function jsonRpcError(
  id: JsonRpcId,
  code: number,
  message: string,
  data?: unknown,
): JsonRpcErrorResponse {
  const error: JsonRpcErrorResponse['error'] = { code, message };
  if (data !== undefined) error.data = data;
  return { jsonrpc: '2.0', id, error };
}

export const JSON_RPC = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
} as const;
