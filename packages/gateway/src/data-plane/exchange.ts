import type { IncomingHttpHeaders } from 'node:http';
import { performance } from 'node:perf_hooks';
import { boundedMemo } from '@mcp-identity/common';
import type { VerifiedToken } from '../auth/verifier.js';
import type { Exchange, Refusal } from '../policies/policy.js';
import type { McpCall } from './jsonrpc.js';
import type { ProxyRuntime, ResourceUrls } from './registry.js';
import type { UpstreamFailure } from './upstream-failure.js';

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
  private urls: ResourceUrls | undefined = undefined;

  constructor(
    readonly runtime: ProxyRuntime,
    readonly httpMethod: string,
    readonly headers: IncomingHttpHeaders,
    readonly remoteAddress: string,
    private readonly base: string,
  ) {}

  get resourceUrl(): string {
    this.urls ??= this.runtime.urlsFor(this.base);
    return this.urls.resourceUrl;
  }

  get resourceMetadataUrl(): string {
    this.urls ??= this.runtime.urlsFor(this.base);
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
