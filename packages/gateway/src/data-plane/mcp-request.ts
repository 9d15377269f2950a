import { jsonRpcError, type Logger, recordLineWriter } from '@mcp-identity/common';
import type { GatewayMetrics } from '../metrics.js';
import { unauthenticated } from '../policies/challenge.js';
import type { AuthOutcome, Policy, Refusal } from '../policies/policy.js';
import type { ByteBudget } from './body-budget.js';
import { type AuditRecord, auditRecordJson, type McpExchange } from './exchange.js';
import { type McpCall, parseMcpBody, requestIdOf } from './jsonrpc.js';
import type { McpHttp } from './mcp-http.js';
import { bodyTextError } from './request-body.js';
import { forwardToUpstream, type ListFilter } from './upstream-forwarding.js';

export interface McpRequestHandling {
  /** Header stage: authenticates the caller when every request of its kind needs one. */
  onHeaders(exchange: McpExchange, http: McpHttp): Promise<void> | undefined;
  /**
   * Body stage: parses, checks the protocol version, runs the policies, forwards. A promise
   * only while something asynchronous is under way (a policy, or a list being filtered).
   */
  handle(exchange: McpExchange, http: McpHttp): Promise<void> | undefined;
  /** Answers from the gateway itself (not a policy), with the audit line. */
  answer(
    exchange: McpExchange,
    http: McpHttp,
    status: number,
    decision: McpExchange['decision'],
    reason: string,
    body: unknown,
    headers?: Readonly<Record<string, string>>,
  ): void;
}

const AUTHENTICATION_REQUIRED = {
  error: 'Unauthorized',
  message: 'Unauthorized: authentication required for this MCP capability',
};

/** Lenient look at a body for the audit log when no policy asked for strict parsing. */
function peekCall(body: Buffer | undefined): McpCall | undefined {
  if (!body || body.length === 0) return undefined;
  const parsed = parseMcpBody(body);
  return parsed.ok ? parsed.call : undefined;
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
  /** Where upstream failures are logged. */
  log: Logger;
  answerBudget: ByteBudget;
}): McpRequestHandling {
  const { metrics, log, answerBudget } = options;
  // One line per request: written as `audit.info({ audit: record }, 'mcp request')` would be,
  // without pino's per-call work (an `AuditRecord`'s fields never hold a credential).
  const auditLine = recordLineWriter<AuditRecord>(
    options.audit,
    'audit',
    'mcp request',
    auditRecordJson,
  );

  const finish = (exchange: McpExchange) => {
    const record = exchange.auditRecord();
    metrics.record(record.proxy, record.method, record.decision, record.latencyMs / 1000);
    if (record.upstreamFailure) metrics.recordUpstreamFailure(record.proxy, record.upstreamFailure);
    auditLine(record);
  };

  const send = (
    http: McpHttp,
    status: number,
    body: unknown,
    headers?: Readonly<Record<string, string>>,
  ) => {
    // An unread body is not worth reading: the connection closes after the answer.
    if (http.hasUnreadBody) http.closeConnection();
    http.sendJson(status, body, headers);
  };

  const refuse = (exchange: McpExchange, http: McpHttp, refusal: Refusal) => {
    exchange.refused(refusal);
    finish(exchange);
    send(http, refusal.status, refusal.body, refusal.headers);
  };

  const answer: McpRequestHandling['answer'] = (
    exchange,
    http,
    status,
    decision,
    reason,
    body,
    headers,
  ) => {
    exchange.decision = decision;
    exchange.reason = reason;
    finish(exchange);
    send(http, status, body, headers);
  };

  /** Takes an authentication's outcome: whether the request may go on. */
  const admit = (exchange: McpExchange, http: McpHttp, outcome: AuthOutcome): boolean => {
    if (outcome.token) exchange.token = outcome.token;
    if (!outcome.refusal) return true;
    refuse(exchange, http, outcome.refusal);
    return false;
  };

  /**
   * Authenticates the caller with the proxy's authenticator (`mcp-auth`); without one a caller
   * can never be authenticated: 401. Synchronous on a verified-token cache hit.
   */
  const authenticate = (exchange: McpExchange, http: McpHttp): boolean | Promise<boolean> => {
    const { authenticator } = exchange.runtime;
    if (!authenticator) {
      const reason = 'governed call without an mcp-auth policy';
      refuse(exchange, http, unauthenticated(exchange, reason, AUTHENTICATION_REQUIRED));
      return false;
    }
    const outcome = authenticator.authenticate(exchange);
    if (outcome instanceof Promise)
      return outcome.then((settled) => admit(exchange, http, settled));
    return admit(exchange, http, outcome);
  };

  /**
   * Runs the policies' hooks in order until one refuses; whether the request may go on. Stays
   * synchronous while the hooks are, so the fast path makes no promise.
   */
  const runPolicies = (
    exchange: McpExchange,
    http: McpHttp,
    policies: readonly Policy[],
    from = 0,
  ): boolean | Promise<boolean> => {
    for (let i = from; i < policies.length; i++) {
      const outcome = policies[i]?.onRequest?.(exchange);
      if (outcome instanceof Promise) {
        return outcome.then((refusal) => {
          if (!refusal) return runPolicies(exchange, http, policies, i + 1);
          refuse(exchange, http, refusal);
          return false;
        });
      }
      if (outcome) {
        refuse(exchange, http, outcome);
        return false;
      }
    }
    return true;
  };

  /** Authenticates the caller of a parsed call if it needs one, then runs the policies. */
  const decide = (exchange: McpExchange, http: McpHttp): boolean | Promise<boolean> => {
    const { runtime, call } = exchange;
    if (call && !exchange.token && runtime.callers.call(call)) {
      const authenticated = authenticate(exchange, http);
      if (authenticated instanceof Promise) {
        return authenticated.then((go) => go && runPolicies(exchange, http, runtime.policies));
      }
      if (!authenticated) return false;
    }
    return runPolicies(exchange, http, runtime.policies);
  };

  return {
    answer,

    onHeaders(exchange, http) {
      const { callers } = exchange.runtime;
      if (!(http.method === 'POST' ? callers.everyCall : callers.transport)) return undefined;
      const passed = authenticate(exchange, http);
      return passed instanceof Promise ? passed.then(() => undefined) : undefined;
    },

    handle(exchange, http) {
      const { runtime } = exchange;
      const { body } = http;
      if (http.method === 'POST') {
        // Every proxy's, policies or none: the audit line names what the upstream will read.
        const notText = body && bodyTextError(body);
        if (notText) {
          const error = jsonRpcError(null, -32700, 'Parse error', notText);
          answer(exchange, http, 400, 'bad_request', 'body not UTF-8 JSON text', error);
          return undefined;
        }
        if (runtime.policies.length > 0) {
          const parsed = parseMcpBody(body ?? '');
          if (!parsed.ok) {
            const error = jsonRpcError(null, parsed.code, parsed.message, parsed.data);
            answer(exchange, http, 400, 'bad_request', 'invalid JSON-RPC', error);
            return undefined;
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
        answer(exchange, http, 400, 'bad_request', 'unsupported protocol version', error);
        return undefined;
      }
      const passed = decide(exchange, http);
      if (passed instanceof Promise) {
        return passed.then((go) => (go ? forward(exchange, http) : undefined));
      }
      return passed ? forward(exchange, http) : undefined;
    },
  };

  function forward(exchange: McpExchange, http: McpHttp): Promise<void> | undefined {
    const { runtime, call } = exchange;
    let filter: ListFilter | undefined;
    const listed = call?.kind.listsItems ? call.kind.capability : undefined;
    if (runtime.listPolicies.length > 0 && listed) {
      filter = {
        key: listed,
        keep: (item) => runtime.listPolicies.every((p) => p.onListItem?.(exchange, item) ?? true),
      };
    }
    return forwardToUpstream({
      http,
      exchange,
      log,
      id: call ? call.id : requestIdOf(http.body),
      filter,
      answerBudget,
      finish,
    });
  }
}
