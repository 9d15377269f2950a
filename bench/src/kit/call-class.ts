import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ToolCallOutcome } from './tool-call.js';

/**
 * What a caller may conclude from one tool call (issue 37):
 * - acknowledged: the operation was carried out, and the answer says so;
 * - refused: the stack deliberately declined it (a SCIM 4xx, a 401/403/429/503 of the
 *   gateway or Area A, an invalid call): not applied;
 * - failed: it did not happen, and the answer (or the lack of a connection) says so;
 * - unknown: it may or may not have been applied; only a look at the IdP tells.
 * A read changes nothing, so a read that got no usable answer failed rather than being unknown.
 */
export type CallClass = 'acknowledged' | 'refused' | 'failed' | 'unknown';

export const CALL_CLASSES: readonly CallClass[] = ['acknowledged', 'refused', 'failed', 'unknown'];

export interface Classified {
  class: CallClass;
  /** A short reason, the same for calls that ended alike (counted in the summary). */
  why: string;
}

/**
 * The last line of a failed workflow's text in the SCIM MCP server (arazzo-mcp's tool results:
 * "Failure: <kind>. Applied: <no|yes|unknown> — <advice>").
 */
const FAILURE_LINE = /(?:^|\n)Failure: ([\w-]+)\. Applied: (no|yes|unknown) — /;

/** Statuses with which the gateway or Area A decline a call before any tool runs. */
const REFUSAL_STATUSES = new Set([400, 401, 403, 404, 405, 406, 413, 415, 429, 503]);

export function classifyOutcome(
  outcome: ToolCallOutcome,
  options: { writes: boolean },
): Classified {
  const classified = classifyAny(outcome);
  if (!options.writes && classified.class === 'unknown') return { ...classified, class: 'failed' };
  return classified;
}

function classifyAny(outcome: ToolCallOutcome): Classified {
  switch (outcome.kind) {
    case 'result':
      return classifyResult(outcome.result);
    case 'rpc-error':
      return { class: 'refused', why: `JSON-RPC error ${outcome.code}` };
    case 'not-sent':
      return { class: 'failed', why: 'not sent (no connection or initialize failed)' };
    case 'lost':
      return { class: 'unknown', why: 'sent, no answer' };
    case 'http':
      if (REFUSAL_STATUSES.has(outcome.status)) {
        return { class: 'refused', why: `HTTP ${outcome.status}` };
      }
      // A 502/504 to `initialize` says nothing about a call that was never sent.
      return outcome.during === 'connect'
        ? { class: 'failed', why: `HTTP ${outcome.status} to initialize` }
        : { class: 'unknown', why: `HTTP ${outcome.status} to the call` };
  }
}

/** A tool result of the SCIM MCP server, read from `isError` and its text (and `error`). */
export function classifyResult(result: CallToolResult): Classified {
  const text = result.content.map((item) => (item.type === 'text' ? item.text : '')).join('\n');
  if (result.isError) {
    const failure = FAILURE_LINE.exec(text);
    if (failure) {
      const [, kind, applied] = failure;
      return { class: applied === 'no' ? 'failed' : 'unknown', why: `${kind}, applied ${applied}` };
    }
    if (text.startsWith('MCP error -32602')) return { class: 'refused', why: 'invalid arguments' };
    // `--http-errors-as-tool-errors`: a 4xx answer of the IdP as a tool error.
    if (/^Workflow (Success|Result)/.test(text)) return { class: 'refused', why: 'IdP 4xx' };
    return { class: 'unknown', why: 'tool error that does not say whether it applied' };
  }
  if (text.startsWith('Workflow Success')) {
    const outputs = (result.structuredContent ?? {}) as { error?: unknown; errorStatus?: unknown };
    return outputs.error === null || outputs.error === undefined
      ? { class: 'acknowledged', why: 'success' }
      : { class: 'refused', why: `IdP ${String(outputs.errorStatus ?? '4xx')}` };
  }
  if (text.startsWith('Workflow Result:')) {
    return text.includes('status=workflow_complete')
      ? { class: 'acknowledged', why: 'success' }
      : { class: 'refused', why: 'IdP 4xx' };
  }
  // What the issue found: "Workflow Error: …" with isError false, success in form only.
  return { class: 'unknown', why: `isError false, yet "${firstWords(text)}"` };
}

function firstWords(text: string): string {
  const words = text.split(/\s+/).slice(0, 2).join(' ');
  return words.length > 40 ? `${words.slice(0, 40)}…` : words;
}
