import {
  ACCESS_TOKEN_TYPE,
  addBounded,
  clientSecretBasic,
  endClientSpan,
  type Logger,
  tokenExchangeForm,
} from '@mcp-identity/common';
import { decodeJwt } from 'jose';
import { Pool } from 'undici';
import type { McpExchange } from './pipeline.js';
import { clientSpan } from './tracing.js';
import { failureOf } from './upstream-failure.js';

/*
 * `upstream.tokenExchange` (issue 41): the caller's token, once the policies let its request
 * through, is exchanged at the identity provider's token endpoint (RFC 8693) for a token whose
 * audience is the upstream, and that token — never the caller's own (MCP authorization, "Access
 * Token Privilege Restriction": no token passthrough) — goes upstream. Results are cached per
 * caller token within the proxy (one resource and one scope set per proxy), never past either
 * token's lifetime, and identical exchanges in flight share one request.
 */

/** Exchanged tokens kept per proxy; the oldest goes first (`addBounded`). */
const MAX_CACHED = 10_000;
/** Exchanges one proxy waits for at once; past it a request is refused 503 (an IdP too slow). */
const MAX_PENDING = 1_000;
/**
 * A cached token is dropped this long before it expires, so the upstream never receives one
 * that expires in transit or on a clock a little ahead of ours; a tenth of the lifetime instead
 * when that is shorter.
 */
const EXPIRY_MARGIN_MS = 30_000;
/** Connecting, the answer's headers, and silence in its body: each at most this long. */
const TOKEN_ENDPOINT_TIMEOUT_MS = 5_000;
/** A token answer is a few kilobytes; a larger one is not a token answer. */
const MAX_ANSWER_BYTES = 64 * 1024;
/** Connections a proxy opens to its token endpoint at most. */
const CONNECTIONS = 16;
/** `Retry-After` when the identity provider cannot be reached or did not say. */
const DEFAULT_RETRY_AFTER = '5';

/**
 * RFC 8693 §2.2.2 errors that are about the caller's token or the target, not the gateway's
 * own set-up: the caller is told (403), with the identity provider's error.
 */
const CALLER_ERRORS = new Set(['invalid_grant', 'invalid_target', 'invalid_scope']);

/** `upstream.tokenExchange` as deployed, the client secret resolved. */
export interface TokenExchangeSettings {
  tokenEndpoint: string;
  clientId: string;
  clientSecret: string;
  /** RFC 8707 `resource` of the exchanged token: the upstream's URL unless configured. */
  resource: string;
  /** Requested scopes; undefined leaves them to the identity provider (the caller token's). */
  scopes: readonly string[] | undefined;
}

/** Why an exchange gave no token: what the client is answered, and the audit line's fields. */
export interface TokenExchangeFailure {
  status: 403 | 502 | 503;
  decision: 'forbidden' | 'upstream_error' | 'unavailable';
  /** The audit line's `exchangeFailure`: the identity provider's error code, or how it failed. */
  failure: string;
  reason: string;
  message: string;
  /** The identity provider's refusal, for the client (403 only). */
  data?: { error: string; error_description?: string };
  retryAfter?: string;
}

export type TokenExchangeOutcome =
  | { ok: true; token: string; jti: string | undefined }
  | { ok: false; failure: TokenExchangeFailure };

interface Cached {
  token: string;
  jti: string | undefined;
  /** Milliseconds since the epoch after which the entry is not used. */
  usableUntil: number;
}

function unavailable(failure: string, reason: string, retryAfter?: string): TokenExchangeOutcome {
  return {
    ok: false,
    failure: {
      status: 503,
      decision: 'unavailable',
      failure,
      reason,
      message: 'The identity provider could not exchange the token; retry later',
      retryAfter: retryAfter ?? DEFAULT_RETRY_AFTER,
    },
  };
}

/** The identity provider answered in a way the gateway cannot use: its set-up or the IdP's. */
function misbehaved(failure: string, reason: string): TokenExchangeOutcome {
  return {
    ok: false,
    failure: {
      status: 502,
      decision: 'upstream_error',
      failure,
      reason,
      message: 'The gateway could not obtain a token for the upstream',
    },
  };
}

/** RFC 9110 §10.2.3 delay-seconds, else the default (an HTTP-date is not worth parsing here). */
function retryAfterOf(value: string | string[] | undefined): string {
  return typeof value === 'string' && /^\d{1,5}$/.test(value) ? value : DEFAULT_RETRY_AFTER;
}

/** The exchanged token's `jti` for the audit line, read without verifying (it is ours to send). */
function jtiOf(token: string): string | undefined {
  try {
    const { jti } = decodeJwt(token);
    return typeof jti === 'string' ? jti : undefined;
  } catch {
    // An opaque token has no claims to read.
    return undefined;
  }
}

/** An RFC 6749 §5.2 error answer's code and description, when the body is one. */
function oauthErrorOf(body: unknown): { error: string; error_description?: string } | undefined {
  if (body === null || typeof body !== 'object') return undefined;
  const { error, error_description: description } = body as Record<string, unknown>;
  if (typeof error !== 'string' || !/^[\x20-\x21\x23-\x5b\x5d-\x7e]{1,64}$/.test(error)) {
    return undefined;
  }
  return typeof description === 'string' && description.length <= 512
    ? { error, error_description: description }
    : { error };
}

/**
 * One proxy's token exchanges: its own connections to the token endpoint, the cache of exchanged
 * tokens by caller token, and the exchanges in flight.
 */
export class TokenExchanger {
  private readonly pool: Pool;
  private readonly path: string;
  private readonly endpoint: URL;
  private readonly authorization: string;
  private readonly form: URLSearchParams;
  private readonly cache = new Map<string, Cached>();
  private readonly pending = new Map<string, Promise<TokenExchangeOutcome>>();

  constructor(
    settings: TokenExchangeSettings,
    private readonly now: () => number,
    private readonly log: Logger,
    private readonly proxy: string,
  ) {
    const endpoint = new URL(settings.tokenEndpoint);
    this.endpoint = endpoint;
    this.path = `${endpoint.pathname}${endpoint.search}`;
    // The upstream's trust: Node's CA store plus NODE_EXTRA_CA_CERTS, verification always on.
    this.pool = new Pool(endpoint.origin, {
      connections: CONNECTIONS,
      connect: { timeout: TOKEN_ENDPOINT_TIMEOUT_MS },
      headersTimeout: TOKEN_ENDPOINT_TIMEOUT_MS,
      bodyTimeout: TOKEN_ENDPOINT_TIMEOUT_MS,
    });
    this.authorization = clientSecretBasic(settings.clientId, settings.clientSecret);
    this.form = tokenExchangeForm({ resource: settings.resource, scopes: settings.scopes });
  }

  /**
   * A token for the upstream in place of `callerToken` (which expires at `callerExpiresAt`,
   * milliseconds): from the cache when one is there (synchronously), else from the identity
   * provider, sharing a request already in flight for the same caller token.
   */
  exchange(
    callerToken: string,
    callerExpiresAt: number,
    /** The request it is for, when tracing: the token request is a child span of its span. */
    tracedFor?: McpExchange,
  ): TokenExchangeOutcome | Promise<TokenExchangeOutcome> {
    const cached = this.cache.get(callerToken);
    if (cached !== undefined) {
      if (cached.usableUntil > this.now())
        return { ok: true, token: cached.token, jti: cached.jti };
      this.cache.delete(callerToken);
    }
    const inFlight = this.pending.get(callerToken);
    if (inFlight !== undefined) return inFlight;
    if (this.pending.size >= MAX_PENDING) {
      return unavailable('busy', 'token exchanges in flight at their bound');
    }
    const request = this.request(callerToken, callerExpiresAt, tracedFor).finally(() => {
      this.pending.delete(callerToken);
    });
    this.pending.set(callerToken, request);
    return request;
  }

  private async request(
    callerToken: string,
    callerExpiresAt: number,
    tracedFor: McpExchange | undefined,
  ): Promise<TokenExchangeOutcome> {
    const form = new URLSearchParams(this.form);
    form.set('subject_token', callerToken);
    let status: number;
    let body: unknown;
    let retryAfter: string | string[] | undefined;
    const traced = tracedFor && clientSpan(tracedFor, 'POST', this.endpoint);
    try {
      const answer = await this.pool.request({
        path: this.path,
        method: 'POST',
        headers: {
          ...traced?.headers,
          authorization: this.authorization,
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body: form.toString(),
      });
      status = answer.statusCode;
      retryAfter = answer.headers['retry-after'];
      body = await readJson(answer.body);
      if (traced) endClientSpan(traced.span, status);
    } catch (error) {
      const failure = failureOf(error) === 'timeout' ? 'timeout' : 'unreachable';
      if (traced) endClientSpan(traced.span, undefined, failure);
      // The error's message names the endpoint at most, never the form.
      this.log.warn(
        { proxy: this.proxy, failure, err: (error as Error).message },
        'token exchange failed',
      );
      return unavailable(failure, `token endpoint ${failure}`);
    }
    if (status === 200) return this.accepted(callerToken, callerExpiresAt, body);
    const refusal = oauthErrorOf(body);
    if (status === 429 || status >= 500) {
      return unavailable(
        'idp_error',
        `token endpoint answered ${status}`,
        retryAfterOf(retryAfter),
      );
    }
    if (refusal && CALLER_ERRORS.has(refusal.error)) {
      return {
        ok: false,
        failure: {
          status: 403,
          decision: 'forbidden',
          failure: refusal.error,
          reason: `token exchange refused: ${refusal.error}`,
          message: 'The identity provider refused to exchange the token for the upstream',
          data: refusal,
        },
      };
    }
    // invalid_client, unauthorized_client, invalid_request...: the proxy's set-up is wrong.
    const failure = refusal?.error ?? `status_${status}`;
    this.log.error(
      { proxy: this.proxy, status, error: failure },
      'token exchange refused: check the proxy upstream.tokenExchange and the identity provider',
    );
    return misbehaved(failure, `token exchange refused: ${failure}`);
  }

  /** A 200 answer (RFC 8693 §2.2.1): the token, cached within both tokens' lifetimes. */
  private accepted(
    callerToken: string,
    callerExpiresAt: number,
    body: unknown,
  ): TokenExchangeOutcome {
    const answer = (body ?? {}) as Record<string, unknown>;
    const token = answer.access_token;
    const expiresIn = answer.expires_in;
    if (
      typeof token !== 'string' ||
      !/^[A-Za-z0-9\-._~+/]+=*$/.test(token) ||
      typeof answer.token_type !== 'string' ||
      answer.token_type.toLowerCase() !== 'bearer' ||
      (answer.issued_token_type !== undefined && answer.issued_token_type !== ACCESS_TOKEN_TYPE)
    ) {
      return misbehaved('bad_answer', 'token endpoint answer is not a bearer access token');
    }
    const jti = jtiOf(token);
    if (typeof expiresIn === 'number' && expiresIn > 0) {
      const lifetime = expiresIn * 1000;
      const now = this.now();
      const usableUntil = Math.min(
        now + lifetime - Math.min(EXPIRY_MARGIN_MS, lifetime / 10),
        callerExpiresAt,
      );
      if (usableUntil > now) {
        addBounded(this.cache, callerToken, { token, jti, usableUntil }, MAX_CACHED);
      }
    }
    // Without expires_in (RECOMMENDED only) the token is used once: its lifetime is unknown.
    return { ok: true, token, jti };
  }

  close(): Promise<void> {
    this.cache.clear();
    return this.pool.close();
  }

  destroy(): Promise<void> {
    this.cache.clear();
    return this.pool.destroy();
  }
}

/** A token endpoint's JSON answer, at most `MAX_ANSWER_BYTES`; undefined when it is not JSON. */
async function readJson(body: AsyncIterable<Buffer>): Promise<unknown> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of body) {
    length += chunk.length;
    if (length > MAX_ANSWER_BYTES) return undefined;
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return undefined;
  }
}
