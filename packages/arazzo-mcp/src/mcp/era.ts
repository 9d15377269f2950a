import type { IncomingMessage } from 'node:http';
import { isJsonObject } from '@mcp-identity/common';
import {
  classifyInboundRequest,
  PROTOCOL_VERSION_META_KEY,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/server';

const header = (value: string | string[] | undefined) =>
  Array.isArray(value) ? value.join(', ') : value;

const LEGACY_VERSIONS: ReadonlySet<string> = new Set(SUPPORTED_PROTOCOL_VERSIONS);

/**
 * Whether a message, or any message of a batch, claims the modern era: the protocol-version
 * key in its `params._meta` (MCP 2026-07-28, Versioning), whatever else the envelope holds.
 */
const claimsModernEra = (body: unknown): boolean =>
  Array.isArray(body)
    ? body.some(claimsModernEra)
    : isJsonObject(body) &&
      isJsonObject(body.params) &&
      isJsonObject(body.params._meta) &&
      PROTOCOL_VERSION_META_KEY in body.params._meta;

/**
 * Whether the SDK's dual-era entry would serve this POST as legacy (2025-era) traffic: no
 * modern claim, in the body or the `MCP-Protocol-Version` header (MCP 2026-07-28, Versioning,
 * "Backward Compatibility"), as the SDK's own `classifyInboundRequest` decides. A POST claiming
 * nothing, with no version header or a legacy one, is legacy without asking the classifier
 * (which validates the message with a schema: the cost the plain-call path avoids). Everything
 * the modern ladder refuses (a header–body mismatch, an unsupported modern version, a batch
 * holding a modern message) is the modern entry's to answer, so the legacy server never serves
 * a message claiming the modern era; only a body that is no JSON-RPC message at all and claims
 * nothing keeps the legacy transport's answer.
 */
export function isLegacyExchange(request: IncomingMessage, parsedBody: unknown): boolean {
  if (parsedBody === undefined) return true;
  const { headers } = request;
  const version = header(headers['mcp-protocol-version']);
  const claimed = claimsModernEra(parsedBody);
  if (!claimed && (version === undefined || LEGACY_VERSIONS.has(version))) return true;
  const outcome = classifyInboundRequest({
    httpMethod: 'POST',
    protocolVersionHeader: version,
    mcpMethodHeader: header(headers['mcp-method']),
    mcpNameHeader: header(headers['mcp-name']),
    body: parsedBody,
  });
  return (
    outcome.kind === 'legacy' ||
    (outcome.kind === 'reject' && outcome.rung === 'jsonrpc-shape' && !claimed)
  );
}
