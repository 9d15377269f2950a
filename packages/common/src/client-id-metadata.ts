import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction, type Socket } from 'node:net';
import { rootCertificates } from 'node:tls';
import { Agent, buildConnector, request } from 'undici';
import type { Clock } from './clock.js';
import { systemClock } from './clock.js';
import { InvalidArgumentError, McpIdentityError } from './errors.js';
import { isPublicAddress } from './public-address.js';
import { MAX_REDIRECT_URIS, redirectUriProblem } from './redirect-uris.js';
import { isJsonObject } from './schema.js';

/**
 * OAuth Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document; MCP
 * 2026-07-28 "Client ID Metadata Documents"): a client whose `client_id` is an HTTPS URL is
 * described by the JSON document at that URL, fetched by the authorization server instead of
 * registered with it. The URL is a stranger's choice, so the fetch is the SSRF surface of §6.5:
 * HTTPS only, public addresses only (checked on the address resolved and again on the address
 * connected to), no redirects, JSON only, a size cap and a time limit. Documents are cached
 * per their HTTP caching headers, clamped to bounds, in a bounded cache.
 */

/** Why a client ID metadata document cannot be used; its message is safe to show. */
export class ClientIdMetadataError extends McpIdentityError {
  readonly code = 'ERR_CLIENT_ID_METADATA';
}

/** A validated document: what the authorization servers use of it. */
export interface ClientIdMetadata {
  /** The URL, equal to the document's `client_id`. */
  clientId: string;
  /** The host the document came from, for the consent page. */
  host: string;
  redirectUris: string[];
  clientName: string;
  scope: string | undefined;
  /** The whole document, for display metadata each server filters by its own rules. */
  document: Readonly<Record<string, unknown>>;
}

export interface ClientIdMetadataOptions {
  /**
   * Development only: also fetch documents from loopback, private and other non-public
   * addresses (a client served on localhost). Off by default; never on in production.
   */
  allowPrivateAddresses?: boolean;
  /** Certificates trusted besides the system's, e.g. a development stack's own CA (PEM). */
  ca?: string | readonly string[];
  /** Largest document accepted, in bytes. Default 5 KiB, the draft's suggestion. */
  maxBytes?: number;
  /** Time allowed for the whole fetch (connect, headers, body). Default 5 s. */
  timeoutMs?: number;
  /** A document is kept at least this long, whatever its headers say. Default 60 s. */
  minTtlSeconds?: number;
  /** And at most this long. Default 24 h. */
  maxTtlSeconds?: number;
  /** Kept this long when its response has no caching headers. Default 5 min. */
  defaultTtlSeconds?: number;
  /** Documents cached at most; the least recently used goes first. Default 1000. */
  maxEntries?: number;
  clock?: Clock;
}

const DEFAULTS = {
  maxBytes: 5 * 1024,
  timeoutMs: 5_000,
  minTtlSeconds: 60,
  maxTtlSeconds: 86_400,
  defaultTtlSeconds: 300,
  maxEntries: 1_000,
};

const MAX_CLIENT_NAME_LENGTH = 200;
const MAX_SCOPE_LENGTH = 2_000;
const MAX_URL_LENGTH = 2_000;

/** Whether a `client_id` names a metadata document (an HTTPS URL) rather than a registration. */
export function isClientIdMetadataUrl(clientId: string): boolean {
  return clientId.startsWith('https://');
}

/**
 * Why `clientId` cannot be a metadata document URL (draft §3): https, a path, no dot
 * segments, no fragment, no user information; or undefined when it can.
 */
export function clientIdUrlProblem(clientId: string): string | undefined {
  if (clientId.length > MAX_URL_LENGTH) return `longer than ${MAX_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return 'not a URL';
  }
  if (url.protocol !== 'https:') return 'not an https URL';
  if (url.username !== '' || url.password !== '') return 'it carries user information';
  if (clientId.includes('#')) return 'it has a fragment';
  const path = clientId.slice(url.origin.length).split('?')[0] ?? '';
  if (path === '' || path === '/') return 'it has no path';
  if (path.split('/').some((segment) => segment === '.' || segment === '..')) {
    return 'its path has dot segments';
  }
  // The parser normalises case, default port and escapes; the draft compares exact strings.
  if (url.href !== clientId) return `it is not in normal form (${url.href})`;
  return undefined;
}

function refuse(clientId: string, reason: string): never {
  throw new ClientIdMetadataError(`The client metadata document at ${clientId} ${reason}.`);
}

const optionalString = (value: unknown): value is string | undefined =>
  value === undefined || typeof value === 'string';

/**
 * RFC 7591 §2 metadata rules for a document at `clientId`, and the draft's own: `client_id`
 * equal to the URL, no client secret (§4.1), no authentication but `none` (our servers accept
 * public clients only), the code grant, redirect URIs by the shared allow-list.
 */
export function readClientIdMetadata(clientId: string, body: unknown): ClientIdMetadata {
  const fail = (reason: string) => refuse(clientId, reason);
  if (!isJsonObject(body)) fail('is not a JSON object');
  const doc = body as Record<string, unknown>;
  if (doc.client_id !== clientId) {
    fail(`names another client_id (${JSON.stringify(doc.client_id)}); it must equal its URL`);
  }
  if ('client_secret' in doc || 'client_secret_expires_at' in doc) {
    fail('holds a client secret, which a metadata document must not');
  }
  const method = doc.token_endpoint_auth_method ?? 'none';
  if (method !== 'none') {
    fail(`asks for token_endpoint_auth_method ${JSON.stringify(method)}; only none is supported`);
  }
  const grants = doc.grant_types ?? ['authorization_code'];
  if (
    !Array.isArray(grants) ||
    !grants.includes('authorization_code') ||
    !grants.every((grant) => grant === 'authorization_code' || grant === 'refresh_token')
  ) {
    fail('must allow authorization_code and no grant but it and refresh_token');
  }
  const responses = doc.response_types ?? ['code'];
  if (!Array.isArray(responses) || responses.some((type) => type !== 'code')) {
    fail('must use response type code only');
  }
  const uris = doc.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > MAX_REDIRECT_URIS) {
    fail(`must list 1 to ${MAX_REDIRECT_URIS} redirect_uris`);
  }
  for (const uri of uris as unknown[]) {
    if (typeof uri !== 'string') fail('has a redirect URI that is not a string');
    const problem = redirectUriProblem(uri as string);
    if (problem !== undefined) fail(`has a refused redirect URI: ${problem}`);
  }
  const name = typeof doc.client_name === 'string' ? doc.client_name.trim() : '';
  if (name === '' || name.length > MAX_CLIENT_NAME_LENGTH) {
    fail(`must have a client_name of 1 to ${MAX_CLIENT_NAME_LENGTH} characters`);
  }
  if (!optionalString(doc.scope) || (doc.scope?.length ?? 0) > MAX_SCOPE_LENGTH) {
    fail('has a scope that is not a short space-separated string');
  }
  return {
    clientId,
    host: new URL(clientId).host,
    redirectUris: uris as string[],
    clientName: name,
    scope: doc.scope as string | undefined,
    document: doc,
  };
}

/**
 * Seconds a response may be reused (RFC 9111 §4.2.1: `max-age`, else `Expires` − `Date`),
 * `no-store` and `no-cache` counting as 0; undefined when the response says nothing.
 */
export function freshnessSeconds(headers: Record<string, unknown>): number | undefined {
  const header = (name: string) => {
    const value = headers[name];
    return Array.isArray(value) ? value.join(', ') : typeof value === 'string' ? value : '';
  };
  const directives = header('cache-control').toLowerCase();
  if (/(^|[\s,])(no-store|no-cache)\b/.test(directives)) return 0;
  const maxAge = /(?:^|[\s,])max-age\s*=\s*"?(\d+)/.exec(directives)?.[1];
  if (maxAge !== undefined) return Number(maxAge);
  const expires = Date.parse(header('expires'));
  if (Number.isNaN(expires)) return header('expires') === '' ? undefined : 0;
  const date = Date.parse(header('date'));
  return Math.max(0, Math.floor((expires - (Number.isNaN(date) ? Date.now() : date)) / 1000));
}

type Resolved = Required<Omit<ClientIdMetadataOptions, 'ca'>> & { ca: string[] | undefined };

function resolveOptions(options: ClientIdMetadataOptions): Resolved {
  const merged = { ...DEFAULTS, ...options };
  for (const name of Object.keys(DEFAULTS) as (keyof typeof DEFAULTS)[]) {
    const value = merged[name];
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new InvalidArgumentError(`${name} must be a positive integer`);
    }
  }
  if (merged.minTtlSeconds > merged.maxTtlSeconds) {
    throw new InvalidArgumentError('minTtlSeconds must not exceed maxTtlSeconds');
  }
  const ca = options.ca === undefined ? undefined : [options.ca].flat();
  return {
    ...merged,
    allowPrivateAddresses: options.allowPrivateAddresses ?? false,
    clock: options.clock ?? systemClock,
    ca,
  };
}

/** DNS resolution that keeps public addresses only, so a private one is never connected to. */
const publicLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
    if (error) return callback(error, '', 0);
    const usable = addresses.filter((entry) => isPublicAddress(entry.address));
    if (usable.length === 0) {
      const refused = new ClientIdMetadataError(`${hostname} has no public address`);
      return callback(refused as NodeJS.ErrnoException, '', 0);
    }
    if (options.all) return (callback as (e: null, a: LookupAddress[]) => void)(null, usable);
    const first = usable[0]!;
    return callback(null, first.address, first.family);
  });
};

/**
 * Fetches, validates and caches client ID metadata documents. One per authorization server;
 * `close()` releases its connections.
 */
export class ClientIdMetadataResolver {
  private readonly options: Resolved;
  private readonly agent: Agent;
  private readonly cache = new Map<string, { value: ClientIdMetadata; expiresAt: number }>();
  /** Fetches in progress, shared by concurrent requests for one document. */
  private readonly pending = new Map<string, Promise<ClientIdMetadata>>();

  constructor(options: ClientIdMetadataOptions = {}) {
    this.options = resolveOptions(options);
    const { allowPrivateAddresses, ca, timeoutMs } = this.options;
    const connect = buildConnector({
      timeout: timeoutMs,
      ...(ca === undefined ? {} : { ca: [...rootCertificates, ...ca] }),
      ...(allowPrivateAddresses ? {} : { lookup: publicLookup }),
    });
    this.agent = new Agent({
      connections: 4,
      pipelining: 0,
      connect: (opts, callback) =>
        connect(opts, (error, socket) => {
          if (error !== null) return callback(error, null);
          // The address actually connected to: a name resolved again between the check and the
          // connection, or an IP literal (which skips the lookup), is caught here.
          const remote = (socket as Socket).remoteAddress ?? '';
          if (allowPrivateAddresses || isPublicAddress(remote)) return callback(null, socket);
          socket.destroy();
          return callback(new ClientIdMetadataError(`${remote} is not a public address`), null);
        }),
    });
  }

  /** The validated document for `clientId`, from the cache or fetched. */
  async resolve(clientId: string): Promise<ClientIdMetadata> {
    const now = this.options.clock();
    const cached = this.cache.get(clientId);
    if (cached !== undefined && cached.expiresAt > now) {
      this.cache.delete(clientId);
      this.cache.set(clientId, cached);
      return cached.value;
    }
    const running = this.pending.get(clientId);
    if (running !== undefined) return running;
    const fetching = this.fetchAndValidate(clientId).finally(() => this.pending.delete(clientId));
    this.pending.set(clientId, fetching);
    return fetching;
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  private remember(value: ClientIdMetadata, seconds: number | undefined): void {
    const { minTtlSeconds, maxTtlSeconds, defaultTtlSeconds, maxEntries, clock } = this.options;
    const ttl = Math.min(maxTtlSeconds, Math.max(minTtlSeconds, seconds ?? defaultTtlSeconds));
    this.cache.delete(value.clientId);
    while (this.cache.size >= maxEntries) {
      const oldest = this.cache.keys().next().value as string;
      this.cache.delete(oldest);
    }
    this.cache.set(value.clientId, { value, expiresAt: clock() + ttl * 1000 });
  }

  private async fetchAndValidate(clientId: string): Promise<ClientIdMetadata> {
    const problem = clientIdUrlProblem(clientId);
    if (problem !== undefined) {
      throw new ClientIdMetadataError(`The client_id ${clientId} is no metadata URL: ${problem}.`);
    }
    const url = new URL(clientId);
    const literal = url.hostname.replace(/^\[|\]$/g, '');
    if (!this.options.allowPrivateAddresses && isIP(literal) && !isPublicAddress(literal)) {
      refuse(clientId, `is on a non-public address (${literal}) and cannot be fetched`);
    }
    const { body, headers } = await this.download(clientId);
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      refuse(clientId, 'is not valid JSON');
    }
    const value = readClientIdMetadata(clientId, parsed);
    this.remember(value, freshnessSeconds(headers));
    return value;
  }

  /** The response body as text, within the size and time limits. */
  private async download(
    clientId: string,
  ): Promise<{ body: string; headers: Record<string, unknown> }> {
    const { maxBytes, timeoutMs } = this.options;
    let response: Awaited<ReturnType<typeof request>>;
    try {
      response = await request(clientId, {
        dispatcher: this.agent,
        method: 'GET',
        headers: { accept: 'application/json' },
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      const reason =
        error instanceof ClientIdMetadataError
          ? error.message
          : error instanceof Error && error.name === 'TimeoutError'
            ? `no answer within ${timeoutMs} ms`
            : ((error as { code?: string }).code ?? (error as Error).message);
      refuse(clientId, `could not be fetched (${reason})`);
    }
    const { statusCode, headers, body } = response;
    const consumeAndRefuse = (reason: string): never => {
      // Dropped unread: the connection goes too, which is what an over-long body deserves.
      body.on('error', () => {});
      body.destroy();
      refuse(clientId, reason);
    };
    if (statusCode >= 300 && statusCode < 400) {
      consumeAndRefuse(`answered a redirect (${statusCode}), which is not followed`);
    }
    if (statusCode !== 200) consumeAndRefuse(`answered HTTP ${statusCode}`);
    const type = String(headers['content-type'] ?? '').toLowerCase();
    if (!/^application\/([\w.-]+\+)?json\s*(;|$)/.test(type)) {
      consumeAndRefuse(`is served as ${JSON.stringify(type)}, not application/json`);
    }
    const declared = Number(headers['content-length']);
    if (declared > maxBytes) consumeAndRefuse(`is larger than ${maxBytes} bytes`);
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of body) {
        size += (chunk as Buffer).length;
        if (size > maxBytes) consumeAndRefuse(`is larger than ${maxBytes} bytes`);
        chunks.push(chunk as Buffer);
      }
    } catch (error) {
      if (error instanceof ClientIdMetadataError) throw error;
      refuse(clientId, `could not be read (${(error as Error).message})`);
    }
    return { body: Buffer.concat(chunks).toString('utf8'), headers };
  }
}
