import type { IncomingHttpHeaders } from 'node:http';
import { performance } from 'node:perf_hooks';
import {
  bearerToken,
  boundedMemo,
  type JsonRpcId,
  jsonRpcError,
  type Logger,
  recordLineWriter,
  type Span,
  traceIdOf,
} from '@mcp-identity/common';
import type { VerifiedToken } from '../auth/verifier.js';
import type { GatewayMetrics } from '../metrics.js';
import { unauthenticated } from '../policies/challenge.js';
import type { AuthOutcome, Exchange, Policy, Refusal } from '../policies/policy.js';
import { type Forwarding, forwardToUpstream } from './forwarding.js';
import {
  bodyMismatch,
  EraRefusal,
  headerCall,
  type McpCall,
  modernVersionOf,
  newestLegacyVersion,
  type ParamHeader,
  paramMismatch,
  parseMcpBody,
  requestIdOf,
  unsupportedVersion,
} from './jsonrpc.js';
import type { ListFilter } from './list-filter.js';
import type { ProxyRuntime, ResourceUrls } from './registry.js';
import { type ByteBudget, bodyTextError, type McpHttp } from './request.js';
import type { TokenExchangeOutcome, TokenExchanger } from './token-exchange.js';
import { exchangeSpan } from './tracing.js';
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
  /** The `mcp-authz` rule that refused it. */
  rule: string | undefined = undefined;
  missingScopes: readonly string[] | undefined = undefined;
  upstreamStatus: number | undefined = undefined;
  /** How the exchange with the upstream failed, if it did (beside any status it answered). */
  upstreamFailure: UpstreamFailure | undefined = undefined;
  /** `jti` of the token sent upstream in the caller's place (`upstream.tokenExchange`). */
  exchangedJti: string | undefined = undefined;
  /** Why no token could be had for the upstream: the IdP's error code, or how it failed. */
  exchangeFailure: string | undefined = undefined;
  /**
   * The request's trace (W3C Trace Context): its span's when tracing is on, else the one the
   * client's `traceparent` names, so that a client's trace id finds its audit line either way.
   */
  traceId: string | undefined = undefined;
  /** The gateway's SERVER span of the request, while tracing is on. */
  spanId: string | undefined = undefined;

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
  if (record.rule !== undefined) json += `,"rule":${jsonString(record.rule)}`;
  if (record.missingScopes !== undefined) {
    json += `,"missingScopes":${JSON.stringify(record.missingScopes)}`;
  }
  if (record.upstreamStatus !== undefined) {
    json += `,"upstreamStatus":${jsonNumber(record.upstreamStatus)}`;
  }
  if (record.upstreamFailure !== undefined) {
    json += `,"upstreamFailure":${jsonString(record.upstreamFailure)}`;
  }
  if (record.exchangedJti !== undefined) {
    json += `,"exchangedJti":${JSON.stringify(record.exchangedJti)}`;
  }
  if (record.exchangeFailure !== undefined) {
    json += `,"exchangeFailure":${jsonString(record.exchangeFailure)}`;
  }
  if (record.traceId !== undefined) json += `,"traceId":"${record.traceId}"`;
  if (record.spanId !== undefined) json += `,"spanId":"${record.spanId}"`;
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
  rule: string | undefined = undefined;
  missingScopes: readonly string[] | undefined = undefined;
  upstreamStatus: number | undefined = undefined;
  upstreamFailure: UpstreamFailure | undefined = undefined;
  exchangedJti: string | undefined = undefined;
  exchangeFailure: string | undefined = undefined;
  /**
   * The request's `MCP-Protocol-Version` when it is of the modern era (`modernVersionOf`): its
   * call was decided on from the headers (`call` holds what they said until the body is read).
   */
  modernVersion: string | undefined = undefined;
  /** Why a modern request's headers are refused, answered once its body gives the id. */
  eraRefusal: EraRefusal | undefined = undefined;
  readonly started = performance.now();
  /**
   * Whether it is traced: set by the front when tracing is on, so that a request's path asks
   * this field, not the tracing module, whether to make spans.
   */
  traced = false;
  /** Its SERVER span once started, while traced (`exchangeSpan` in tracing.ts). */
  span: Span | undefined = undefined;

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

  paramHeaders(): readonly ParamHeader[] | undefined {
    const { call } = this;
    return call?.method === 'tools/call' ? this.runtime.paramHeaders.of(call.target) : undefined;
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
    this.rule = refusal.rule;
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
    record.rule = this.rule;
    record.missingScopes = this.missingScopes;
    record.upstreamStatus = this.upstreamStatus;
    record.upstreamFailure = this.upstreamFailure;
    record.exchangedJti = this.exchangedJti;
    record.exchangeFailure = this.exchangeFailure;
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

/** The legacy era's refusal of a version the proxy does not list (2025-11-25 lifecycle). */
function legacyUnsupported(exchange: McpExchange, version: string): unknown {
  return jsonRpcError(exchange.call?.id ?? null, -32602, 'Unsupported protocol version', {
    supported: [...exchange.runtime.specVersions],
    requested: version,
  });
}

/**
 * The legacy era's version check: a `MCP-Protocol-Version` the proxy does not list is refused;
 * an `initialize` offering one is not (the 2025-11-25 lifecycle: the server answers with a
 * version it supports, and the client decides) — it is forwarded with the proxy's newest
 * legacy version in its place, so the upstream cannot agree to a version the proxy does not
 * serve. The only request whose body the gateway re-serialises: the upstream must read the
 * version the proxy offers, and the client gets it back in the result. The refusal's body
 * when the request cannot go on.
 */
function legacyVersionRefusal(exchange: McpExchange, http: McpHttp): unknown {
  const { runtime, call } = exchange;
  const header = exchange.headers['mcp-protocol-version'];
  if (typeof header === 'string' && !runtime.specVersions.has(header)) {
    return legacyUnsupported(exchange, header);
  }
  if (call?.method !== 'initialize') return undefined;
  const offered = call.params?.protocolVersion;
  if (typeof offered !== 'string' || runtime.specVersions.has(offered)) return undefined;
  const counter = newestLegacyVersion(runtime.specVersions);
  if (counter === undefined || !http.body) return legacyUnsupported(exchange, offered);
  const message = JSON.parse(http.body.toString('utf8')) as { params: Record<string, unknown> };
  message.params.protocolVersion = counter;
  http.body = Buffer.from(JSON.stringify(message));
  return undefined;
}

/** Methods a modern request may use: no GET stream, no session to DELETE (2026-07-28). */
const MODERN_ALLOW = 'POST, OPTIONS';

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
    if (exchange.traced) {
      const { traceId, spanId } = exchangeSpan(exchange).spanContext();
      record.traceId = traceId;
      record.spanId = spanId;
    } else if (exchange.headers.traceparent !== undefined) {
      record.traceId = traceIdOf(exchange.headers.traceparent);
    }
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
    hook: 'onRequest' | 'onBody' = 'onRequest',
  ): boolean | Promise<boolean> => {
    for (let i = from; i < policies.length; i++) {
      const outcome = policies[i]?.[hook]?.(exchange);
      if (outcome instanceof Promise) {
        return outcome.then((refusal) => {
          if (!refusal) return runPolicies(exchange, http, policies, i + 1, hook);
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
    const { callers } = runtime;
    if (call && !exchange.token && (callers.everyCall || callers.call(call))) {
      const authenticated = authenticate(exchange, http);
      if (authenticated instanceof Promise) {
        return authenticated.then((go) => go && runPolicies(exchange, http, runtime.policies));
      }
      if (!authenticated) return false;
    }
    return runPolicies(exchange, http, runtime.policies);
  };

  const refuseEra = (exchange: McpExchange, http: McpHttp, refusal: EraRefusal, id: JsonRpcId) =>
    answer(exchange, http, 400, 'bad_request', refusal.reason, refusal.body(id));

  /**
   * Header stage of a modern request: its version, then the call its `Mcp-Method` / `Mcp-Name`
   * headers name, authenticated and decided on by the policies before a byte of the body is
   * read (the body must then agree, `bodyMismatch`).
   */
  const modernHeaders = (
    exchange: McpExchange,
    http: McpHttp,
    version: string,
  ): Promise<void> | undefined => {
    exchange.modernVersion = version;
    if (http.method !== 'POST') {
      const body = jsonRpcError(null, -32000, `Method not allowed in protocol version ${version}`);
      answer(exchange, http, 405, 'bad_request', 'method not allowed', body, {
        allow: MODERN_ALLOW,
      });
      return undefined;
    }
    // Refused headers run no policy; the (size-capped) body is read only for the error's id.
    const { runtime } = exchange;
    if (!runtime.specVersions.has(version)) {
      exchange.eraRefusal = unsupportedVersion(runtime.specVersions, version);
      return undefined;
    }
    const call = headerCall(exchange.headers);
    if (call instanceof EraRefusal) {
      exchange.eraRefusal = call;
      return undefined;
    }
    exchange.call = call;
    const passed = decide(exchange, http);
    return passed instanceof Promise ? passed.then(() => undefined) : undefined;
  };

  /** Body stage of a modern request, decided already: the body must say what the headers did. */
  const modernBody = (exchange: McpExchange, http: McpHttp, version: string) => {
    if (exchange.eraRefusal) {
      refuseEra(exchange, http, exchange.eraRefusal, requestIdOf(http.body));
      return undefined;
    }
    const parsed = parseMcpBody(http.body ?? '');
    if (!parsed.ok) {
      const error = jsonRpcError(null, parsed.code, parsed.message, parsed.data);
      answer(exchange, http, 400, 'bad_request', 'invalid JSON-RPC', error);
      return undefined;
    }
    const { call } = parsed;
    const annotations =
      call.method === 'tools/call' ? exchange.runtime.paramHeaders.of(call.target) : undefined;
    const refusal =
      bodyMismatch(exchange.call as McpCall, call, version) ??
      (annotations && paramMismatch(annotations, exchange.headers, call.params?.arguments));
    if (refusal) {
      refuseEra(exchange, http, refusal, parsed.call.id);
      return undefined;
    }
    exchange.call = parsed.call;
    // What the headers could not tell is decided now (`Policy.onBody`), before the upstream.
    const passed = runPolicies(exchange, http, exchange.runtime.policies, 0, 'onBody');
    if (passed instanceof Promise) {
      return passed.then((go) => (go ? forward(exchange, http) : undefined));
    }
    return passed ? forward(exchange, http) : undefined;
  };

  return {
    answer,

    onHeaders(exchange, http) {
      const version = modernVersionOf(exchange.headers);
      if (version !== undefined) return modernHeaders(exchange, http, version);
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
        const { modernVersion } = exchange;
        if (modernVersion !== undefined) return modernBody(exchange, http, modernVersion);
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
      const refusal = legacyVersionRefusal(exchange, http);
      if (refusal !== undefined) {
        answer(exchange, http, 400, 'bad_request', 'unsupported protocol version', refusal);
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
    // A modern tools/list answer teaches the proxy its tools' `x-mcp-header` annotations.
    const learning = listed === 'tools' && exchange.modernVersion !== undefined;
    if ((runtime.listPolicies.length > 0 || learning) && listed) {
      filter = {
        key: listed,
        keep: (item) => {
          if (learning) runtime.paramHeaders.learn(item);
          return (
            item !== null &&
            typeof item === 'object' &&
            runtime.listPolicies.every((p) =>
              p.onListItem ? p.onListItem(exchange, item as Record<string, unknown>) : true,
            )
          );
        },
        // A list filtered for its caller must not be cached for another (2026-07-28 caching).
        privateScope: exchange.modernVersion !== undefined && runtime.listPolicies.length > 0,
      };
    } else if (call?.method === 'server/discover') {
      // The versions a client may choose are those both the upstream and the proxy serve.
      filter = {
        key: 'supportedVersions',
        keep: (version) => typeof version === 'string' && runtime.specVersions.has(version),
        privateScope: false,
      };
    }
    const forwarding: Forwarding = {
      http,
      exchange,
      log,
      id: call ? call.id : requestIdOf(http.body),
      filter,
      answerBudget,
      finish,
      bearer: undefined,
      trace: undefined,
    };
    const { tokenExchange } = runtime;
    return tokenExchange
      ? forwardExchanged(tokenExchange, forwarding)
      : forwardToUpstream(forwarding);
  }

  /**
   * Forwards with the caller's token exchanged for the upstream's (`upstream.tokenExchange`),
   * after every policy passed; when no token can be had, answers why, and nothing reaches the
   * upstream. Synchronous on a cache hit.
   */
  function forwardExchanged(exchanger: TokenExchanger, f: Forwarding): Promise<void> | undefined {
    const { exchange, http } = f;
    const callerToken = bearerToken(exchange.headers.authorization);
    if (exchange.token === undefined || callerToken === undefined) {
      // Such a proxy authenticates every request (registry), so this is a defence only.
      refuse(exchange, http, unauthenticated(exchange, 'no caller token to exchange'));
      return undefined;
    }
    const outcome = exchanger.exchange(
      callerToken,
      exchange.token.expiresAt,
      exchange.traced ? exchange : undefined,
    );
    if (outcome instanceof Promise) return outcome.then((settled) => sendExchanged(f, settled));
    return sendExchanged(f, outcome);
  }

  function sendExchanged(f: Forwarding, outcome: TokenExchangeOutcome): Promise<void> | undefined {
    const { exchange, http } = f;
    if (outcome.ok) {
      exchange.exchangedJti = outcome.jti;
      f.bearer = outcome.token;
      return forwardToUpstream(f);
    }
    const { failure } = outcome;
    exchange.exchangeFailure = failure.failure;
    const body = jsonRpcError(f.id, -32000, failure.message, failure.data);
    const headers = failure.retryAfter ? { 'retry-after': failure.retryAfter } : undefined;
    answer(exchange, http, failure.status, failure.decision, failure.reason, body, headers);
    return undefined;
  }
}
