import type { IncomingHttpHeaders } from 'node:http';
import { performance } from 'node:perf_hooks';
import { boundedMemo, jsonRpcError, type Logger, recordLineWriter } from '@mcp-identity/common';
import type { VerifiedToken } from '../auth/verifier.js';
import type { GatewayMetrics } from '../metrics.js';
import { unauthenticated } from '../policies/challenge.js';
import type { AuthOutcome, Exchange, Policy, Refusal } from '../policies/policy.js';
import { forwardToUpstream, type ListFilter } from './forwarding.js';
import { type McpCall, parseMcpBody, requestIdOf } from './jsonrpc.js';
import type { ProxyRuntime, ResourceUrls } from './registry.js';
import { type ByteBudget, bodyTextError, type McpHttp } from './request.js';
import type { UpstreamFailure } from './upstream-failure.js';

/*
 * The policy pipeline of one request to `<context>/mcp`: the exchange the policies read (and
 * the audit record it becomes), authentication once where the proxy needs a caller, the
 * `onRequest` hooks in order, then forwarding; every answer ends with one audit line.
 */

export type Decision =
  | 'allowed'
  | 'unauthenticated'
  | 'forbidden'
  | 'rate_limited'
  | 'bad_request'
  | 'unavailable'
  | 'upstream_error';

/**
 * One audit record per MCP request; never holds a token, and none of its fixed keys can name a
 * credential, so it is written without the logger's key-based redaction (`recordLineWriter` in
 * common), by `auditRecordJson`. A class rather than a plain object: every record has the same
 * shape (fields absent from a request stay undefined and are left out of the JSON line).
 */
export class AuditRecord {
  readonly proxy: string;
  readonly httpMethod: string;
  readonly method: string;
  readonly decision: Decision;
  readonly latencyMs: number;
  tool: string | undefined = undefined;
  subject: string | undefined = undefined;
  clientId: string | undefined = undefined;
  /** Why a request was refused (never the token itself). */
  reason: string | undefined = undefined;
  missingScopes: readonly string[] | undefined = undefined;
  upstreamStatus: number | undefined = undefined;
  /** How the exchange with the upstream failed, if it did (beside any status it answered). */
  upstreamFailure: UpstreamFailure | undefined = undefined;

  constructor(
    proxy: string,
    httpMethod: string,
    method: string,
    decision: Decision,
    latencyMs: number,
  ) {
    this.proxy = proxy;
    this.httpMethod = httpMethod;
    this.method = method;
    this.decision = decision;
    this.latencyMs = latencyMs;
  }
}

/** Strings no longer than this have their JSON form kept: a long one is rare and may be hostile. */
const KEPT_STRING_LENGTH = 128;

/** A string as a JSON literal; the recurring ones (proxy, method, tool, caller) are kept. */
const keptJsonString = boundedMemo(1024, (value) => JSON.stringify(value));

function jsonString(value: string): string {
  return value.length <= KEPT_STRING_LENGTH ? keptJsonString(value) : JSON.stringify(value);
}

/**
 * An audit record as `JSON.stringify` writes it, byte for byte (fields in declaration order,
 * absent ones left out), without its per-call work: nearly every string in a record recurs, and
 * their JSON forms are kept.
 */
export function auditRecordJson(record: AuditRecord): string {
  let json = `{"proxy":${jsonString(record.proxy)},"httpMethod":${jsonString(record.httpMethod)},"method":${jsonString(record.method)},"decision":${jsonString(record.decision)},"latencyMs":${jsonNumber(record.latencyMs)}`;
  if (record.tool !== undefined) json += `,"tool":${jsonString(record.tool)}`;
  if (record.subject !== undefined) json += `,"subject":${jsonString(record.subject)}`;
  if (record.clientId !== undefined) json += `,"clientId":${jsonString(record.clientId)}`;
  if (record.reason !== undefined) json += `,"reason":${jsonString(record.reason)}`;
  if (record.missingScopes !== undefined) {
    json += `,"missingScopes":${JSON.stringify(record.missingScopes)}`;
  }
  if (record.upstreamStatus !== undefined) {
    json += `,"upstreamStatus":${jsonNumber(record.upstreamStatus)}`;
  }
  if (record.upstreamFailure !== undefined) {
    json += `,"upstreamFailure":${jsonString(record.upstreamFailure)}`;
  }
  return `${json}}`;
}

/** A number as JSON writes it: `null` for one that is not finite. */
function jsonNumber(value: number): string {
  return Number.isFinite(value) ? String(value) : 'null';
}

/** One request to `<context>/mcp`: what policies see, and what the audit line records. */
export class McpExchange implements Exchange {
  call: McpCall | undefined = undefined;
  token: VerifiedToken | undefined = undefined;
  decision: Decision = 'allowed';
  reason: string | undefined = undefined;
  missingScopes: readonly string[] | undefined = undefined;
  upstreamStatus: number | undefined = undefined;
  upstreamFailure: UpstreamFailure | undefined = undefined;
  readonly started = performance.now();

  constructor(
    readonly runtime: ProxyRuntime,
    readonly httpMethod: string,
    readonly headers: IncomingHttpHeaders,
    readonly remoteAddress: string,
    /** The proxy's addresses on the listener and host that received the request. */
    private readonly urls: ResourceUrls,
  ) {}

  get resourceUrl(): string {
    return this.urls.resourceUrl;
  }

  get resourceMetadataUrl(): string {
    return this.urls.resourceMetadataUrl;
  }

  get scopesSupported(): readonly string[] {
    return this.runtime.scopesSupported;
  }

  callerKey(): string {
    const subject = this.subject();
    return subject !== undefined ? `sub:${subject}` : `addr:${this.remoteAddress}`;
  }

  /** The verified caller's user id (the proxy's `userIdClaim`), if it is a string. */
  private subject(): string | undefined {
    const subject = this.token?.payload[this.runtime.authenticator?.userIdClaim ?? 'sub'];
    return typeof subject === 'string' ? subject : undefined;
  }

  /** Records a refusal for the audit line. */
  refused(refusal: Refusal): void {
    this.decision = refusal.decision;
    this.reason = refusal.reason;
    if (refusal.missingScopes.length > 0) this.missingScopes = refusal.missingScopes;
  }

  auditRecord(): AuditRecord {
    const record = new AuditRecord(
      this.runtime.id,
      this.httpMethod,
      this.call ? this.call.method || 'response' : this.httpMethod,
      this.decision,
      Math.round((performance.now() - this.started) * 100) / 100,
    );
    if (this.call?.target) record.tool = this.call.target;
    if (this.token) {
      const { payload } = this.token;
      record.subject = this.subject();
      const clientId = payload.azp ?? payload.client_id;
      if (typeof clientId === 'string') record.clientId = clientId;
    }
    record.reason = this.reason;
    record.missingScopes = this.missingScopes;
    record.upstreamStatus = this.upstreamStatus;
    record.upstreamFailure = this.upstreamFailure;
    return record;
  }
}

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

  const refuse = (exchange: McpExchange, http: McpHttp, refusal: Refusal) => {
    exchange.refused(refusal);
    finish(exchange);
    http.sendJson(refusal.status, refusal.body, refusal.headers);
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
    http.sendJson(status, body, headers);
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
