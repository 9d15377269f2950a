import { jsonRpcError, type Logger } from '@mcp-identity/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { McpExchange } from './exchange.js';
import { type McpCall, parseMcpBody, requestIdOf } from './jsonrpc.js';
import type { GatewayMetrics } from './metrics.js';
import { isListMethod, LIST_RESULT_KEY, type Policy, type Refusal } from './policies/policy.js';
import { forwardToUpstream, type ListFilter } from './upstream-forwarding.js';

export interface McpRequestHandling {
  /** Header stage: runs the policies that decide before the body is read. */
  onHeaders(exchange: McpExchange, reply: FastifyReply): Promise<void> | undefined;
  /** Body stage: parses, checks the protocol version, runs the policies, forwards. */
  handle(exchange: McpExchange, request: FastifyRequest, reply: FastifyReply): Promise<unknown>;
  /** Answers from the gateway itself (not a policy), with the audit line. */
  answer(
    exchange: McpExchange,
    reply: FastifyReply,
    status: number,
    decision: McpExchange['decision'],
    reason: string,
    body: unknown,
  ): FastifyReply;
}

/** Lenient look at a body for the audit log when no policy asked for strict parsing. */
function peekCall(body: Buffer | undefined): McpCall | undefined {
  if (!body || body.length === 0) return undefined;
  const parsed = parseMcpBody(body);
  return parsed.ok ? parsed.call : undefined;
}

/** Whether the client is still sending a body the gateway will not read. */
function hasUnreadBody(request: FastifyRequest): boolean {
  const { headers } = request;
  return (
    headers['transfer-encoding'] !== undefined ||
    (headers['content-length'] !== undefined && headers['content-length'] !== '0')
  );
}

/** The protocol version a request names, if any: its header, or initialize's `protocolVersion`. */
function requestedVersion(exchange: McpExchange): string | undefined {
  const header = exchange.headers['mcp-protocol-version'];
  if (typeof header === 'string') return header;
  const { call } = exchange;
  if (call?.method !== 'initialize') return undefined;
  const version = call.params?.protocolVersion;
  return typeof version === 'string' ? version : undefined;
}

export function createMcpRequestHandling(options: {
  metrics: GatewayMetrics;
  audit: Logger;
}): McpRequestHandling {
  const { metrics, audit } = options;

  const finish = (exchange: McpExchange) => {
    const record = exchange.auditRecord();
    metrics.record(record.proxy, record.method, record.decision, record.latencyMs / 1000);
    audit.info({ audit: record }, 'mcp request');
  };

  const send = (reply: FastifyReply, status: number, body: unknown) => {
    // An unread body is not worth reading: the connection closes after the answer.
    if (!reply.request.body && hasUnreadBody(reply.request)) reply.header('connection', 'close');
    return reply.code(status).header('content-type', 'application/json').send(body);
  };

  const refuse = (exchange: McpExchange, reply: FastifyReply, refusal: Refusal) => {
    exchange.refused(refusal);
    finish(exchange);
    return send(reply.headers(refusal.headers), refusal.status, refusal.body);
  };

  const answer: McpRequestHandling['answer'] = (
    exchange,
    reply,
    status,
    decision,
    reason,
    body,
  ) => {
    exchange.decision = decision;
    exchange.reason = reason;
    finish(exchange);
    return send(reply, status, body);
  };

  /**
   * Runs a stage's hooks in order until one refuses; whether the request may go on. Stays
   * synchronous while the hooks are (a verified-token cache hit), so the fast path makes no
   * promise.
   */
  const runPolicies = (
    exchange: McpExchange,
    reply: FastifyReply,
    policies: readonly Policy[],
    stage: 'onHeaders' | 'onRequest',
    from = 0,
  ): boolean | Promise<boolean> => {
    for (let i = from; i < policies.length; i++) {
      const outcome = policies[i]?.[stage]?.(exchange);
      if (outcome instanceof Promise) {
        return outcome.then((refusal) => {
          if (!refusal) return runPolicies(exchange, reply, policies, stage, i + 1);
          refuse(exchange, reply, refusal);
          return false;
        });
      }
      if (outcome) {
        refuse(exchange, reply, outcome);
        return false;
      }
    }
    return true;
  };

  return {
    answer,

    onHeaders(exchange, reply) {
      const policies = exchange.runtime.headerPolicies;
      if (policies.length === 0) return undefined;
      const passed = runPolicies(exchange, reply, policies, 'onHeaders');
      return passed instanceof Promise ? passed.then(() => undefined) : undefined;
    },

    async handle(exchange, request, reply) {
      const { runtime } = exchange;
      const body = Buffer.isBuffer(request.body) ? request.body : undefined;
      if (request.method === 'POST') {
        if (runtime.policies.length > 0) {
          const parsed = parseMcpBody(body ?? '');
          if (!parsed.ok) {
            const error = jsonRpcError(null, parsed.code, parsed.message, parsed.data);
            return answer(exchange, reply, 400, 'bad_request', 'invalid JSON-RPC', error);
          }
          exchange.call = parsed.call;
        } else {
          exchange.call = peekCall(body);
        }
      }
      const version = requestedVersion(exchange);
      if (version !== undefined && !runtime.specVersions.has(version)) {
        const error = jsonRpcError(
          exchange.call?.id ?? null,
          -32602,
          'Unsupported protocol version',
          {
            supported: [...runtime.specVersions],
            requested: version,
          },
        );
        return answer(exchange, reply, 400, 'bad_request', 'unsupported protocol version', error);
      }
      const passed = runPolicies(exchange, reply, runtime.policies, 'onRequest');
      if (!(passed instanceof Promise ? await passed : passed)) return reply;

      const { call } = exchange;
      let filter: ListFilter | undefined;
      if (runtime.listPolicies.length > 0 && call && isListMethod(call.method)) {
        const listMethod = call.method;
        filter = {
          key: LIST_RESULT_KEY[listMethod],
          keep: (item) =>
            runtime.listPolicies.every((p) => p.onListItem?.(exchange, listMethod, item) ?? true),
        };
      }
      return forwardToUpstream({
        request,
        reply,
        exchange,
        body,
        id: call ? call.id : requestIdOf(body),
        filter,
        finish,
      });
    },
  };
}
