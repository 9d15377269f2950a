import {
  CallToolRequestSchema,
  InitializeRequestSchema,
  ListToolsRequestSchema,
  PingRequestSchema,
} from '@modelcontextprotocol/core';
import type { JSONRPCRequest } from '@modelcontextprotocol/server';

/** The requests this server answers, with the SDK's schema of each. */
const SCHEMAS = new Map(
  [InitializeRequestSchema, PingRequestSchema, ListToolsRequestSchema, CallToolRequestSchema].map(
    (schema) => [schema.shape.method.value as string, schema],
  ),
);

/**
 * Why a request's params do not fit its method, or undefined. The SDK's Server parses params
 * before its handlers run and reports a mismatch as -32603 "Internal error" with a raw schema
 * dump; JSON-RPC 2.0 §5.1 calls it -32602 "Invalid params", and the client deserves a short
 * message naming the member (`params.arguments: expected record, received string`).
 */
export function invalidParamsProblem(request: JSONRPCRequest): string | undefined {
  const schema = SCHEMAS.get(request.method);
  if (schema === undefined) return undefined;
  const parsed = schema.safeParse(request);
  if (parsed.success) return undefined;
  const problems = parsed.error.issues.map((issue) => {
    const where = issue.path.map(String).join('.');
    return `${where || 'request'}: ${issue.message.replace(/^Invalid input: /, '')}`;
  });
  return `Invalid params for ${request.method}: ${problems.join('; ')}`;
}
