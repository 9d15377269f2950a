/**
 * OpenAPI security for workflow steps: environment variable names (derived exactly as the
 * reference runner derives them), credential lookup, the OAuth2 client-credentials token
 * request, and applying credentials to a request.
 */
import { createHash } from 'node:crypto';
import {
  boundedMemo,
  clientSecretBasic,
  type JsonObject,
  tokenExchangeForm,
  weakMemo,
} from '@mcp-identity/common';
import { RunFailureError } from './failure.js';
import { describeAnswer, describeUrl, type HttpClient } from './http.js';
import type { OpenApiSource, Operation } from './openapi.js';

const SKIP_WORDS = new Set(['the', 'a', 'an', 'openapi', 'api', 'swagger']);

export function sanitizeEnvName(text: string): string {
  return text
    .toUpperCase()
    .replace(/[^A-Z0-9_]/g, '_')
    .replace(/_+/g, '_')
    .replace(/^_+|_+$/g, '');
}

/** First word of the API title that is not a filler word ("SCIM 2.0 API" -> "SCIM"). */
export function envPrefix(title: string): string {
  const words = title.split(/\s+/).filter(Boolean);
  if (words.length === 0) return '';
  const word = words.find((w) => !SKIP_WORDS.has(w.toLowerCase()));
  // The reference keeps the first word as written when every word is a filler word.
  return word === undefined ? words[0]! : sanitizeEnvName(word);
}

export function envBase(title: string, schemeName: string): string {
  const prefix = envPrefix(title);
  const scheme = sanitizeEnvName(schemeName);
  return prefix ? `${prefix}_${scheme}` : scheme;
}

export interface SchemeCredentials {
  source: string;
  scheme: string;
  type: string;
  /** the environment variables this scheme reads */
  env: string[];
}

function clientCredentialsFlow(scheme: JsonObject): JsonObject | undefined {
  const flows = scheme.flows as JsonObject | undefined;
  const flow = flows?.clientCredentials as JsonObject | undefined;
  return flow && typeof flow.tokenUrl === 'string' && flow.tokenUrl !== '' ? flow : undefined;
}

export function schemeEnvNames(
  source: OpenApiSource,
  schemeName: string,
  scheme: JsonObject,
): string[] {
  const base = envBase(source.title, schemeName);
  switch (scheme.type) {
    case 'apiKey':
      return [base];
    case 'http': {
      const kind = String(scheme.scheme ?? '').toLowerCase();
      if (kind === 'basic') return [`${base}_USERNAME`, `${base}_PASSWORD`];
      if (kind === 'bearer') return [`${base}_TOKEN`];
      return [`${base}_AUTH_VALUE`];
    }
    case 'oauth2':
      return clientCredentialsFlow(scheme)
        ? [`${base}_CLIENT_ID`, `${base}_CLIENT_SECRET`, `${base}_ACCESS_TOKEN`]
        : [`${base}_ACCESS_TOKEN`];
    case 'openIdConnect':
      return [`${base}_ACCESS_TOKEN`];
    default:
      return [];
  }
}

export interface AppliedCredentials {
  headers: Record<string, string>;
  query: Record<string, string>;
  cookies: Record<string, string>;
}

/** A token request failed: the run ends with this message, before the API request is sent. */
export class TokenError extends RunFailureError {
  override readonly code = 'ERR_ARAZZO_TOKEN';

  constructor(message: string) {
    super(message, 'token');
  }
}

interface CachedToken {
  token: string;
  expiresAt: number;
}

const EXPIRY_MARGIN_MS = 30_000;

/** Token cache shared by a runner's runs; used only when `tokenCache` is on. */
export class TokenCache {
  private readonly tokens = new Map<string, CachedToken>();
  /** requests under way, so concurrent runs that miss the cache share one */
  readonly inFlight = new Map<string, Promise<string>>();
  constructor(private readonly now: () => number) {}

  get(key: string): string | undefined {
    const entry = this.tokens.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt - EXPIRY_MARGIN_MS > this.now()) return entry.token;
    this.tokens.delete(key);
    return undefined;
  }

  set(key: string, token: string, expiresInSeconds: unknown): void {
    const seconds = Number(expiresInSeconds);
    // Without a lifetime the token cannot be known to be valid later: keep it for one run only.
    if (!Number.isFinite(seconds) || seconds <= 0) return;
    this.tokens.set(key, { token, expiresAt: this.now() + seconds * 1000 });
  }
}

// The secrets come from the environment, so there are few; the digest keys tokens (never the
// secret itself) and is worked out once per secret rather than once per token request.
const secretDigest = boundedMemo(64, (secret) => createHash('sha256').update(secret).digest('hex'));

/** One scheme of a security requirement, with what the document alone decides about it. */
interface RequiredScheme {
  name: string;
  scheme: JsonObject | undefined;
  /** the environment variables it reads (schemeEnvNames) */
  env: string[];
  /** the OAuth2 client-credentials flow, when the scheme has one */
  flow: JsonObject | undefined;
  /** the scopes the operation declares for it, in document order */
  scopes: readonly string[];
  /** the scopes sorted, as the token cache keys them */
  scopeKey: string;
  /** the token request's form body */
  tokenForm: string;
  /** absolute token URLs by server URL (a relative tokenUrl depends on it) */
  tokenUrls: Map<string, string>;
}

/**
 * An operation's security alternatives (operation, else path item, else root), each scheme
 * resolved: worked out once per operation, since the document does not change once loaded.
 */
const securityAlternatives = weakMemo((op: Operation): RequiredScheme[][] =>
  op.source.securityFor(op).map((requirement) =>
    Object.entries(requirement).map(([name, declared]) => {
      const scheme = op.source.securityScheme(name);
      const scopes = Array.isArray(declared) ? declared : [];
      const form = new URLSearchParams({ grant_type: 'client_credentials' });
      if (scopes.length > 0) form.set('scope', scopes.join(' '));
      return {
        name,
        scheme,
        env: scheme ? schemeEnvNames(op.source, name, scheme) : [],
        flow: scheme?.type === 'oauth2' ? clientCredentialsFlow(scheme) : undefined,
        scopes,
        scopeKey: [...scopes].sort().join(' '),
        tokenForm: form.toString(),
        tokenUrls: new Map(),
      };
    }),
  ),
);

/** `tokenUrl` made absolute: a relative one is resolved against the server URL, as OpenAPI says. */
function tokenUrlOf(required: RequiredScheme, flow: JsonObject, baseUrl: string): string {
  let url = required.tokenUrls.get(baseUrl);
  if (url === undefined) {
    url = new URL(String(flow.tokenUrl), baseUrl).href;
    required.tokenUrls.set(baseUrl, url);
  }
  return url;
}

/**
 * A run on behalf of a caller: the OAuth2 client-credentials schemes then exchange the caller's
 * token (RFC 8693) at the same token URL, with the same client credentials and the same
 * per-operation scopes, instead of asking for a token of their own.
 */
export interface OnBehalfOf {
  /** the caller's access token: the exchange's `subject_token` */
  subjectToken: string;
  /** the exchange's `resource` (RFC 8707); default the API's server URL */
  resource?: string;
}

/** The token-exchange form (RFC 8693 §2.1) for one operation's scopes. */
function exchangeForm(required: RequiredScheme, onBehalfOf: OnBehalfOf, baseUrl: string): string {
  const form = tokenExchangeForm({
    resource: onBehalfOf.resource ?? baseUrl,
    scopes: required.scopes,
  });
  form.set('subject_token', onBehalfOf.subjectToken);
  return form.toString();
}

/**
 * Per-run credential resolution; tokens are fetched once per (credentials, scopes) per run.
 * On behalf of a caller, tokens are exchanged and never cached beyond the run: each belongs to
 * one caller's call (system spec §2.11 rule 8).
 */
export class RunCredentials {
  private readonly runTokens = new Map<string, Promise<string>>();
  private readonly cache: TokenCache | undefined;

  constructor(
    private readonly http: HttpClient,
    private readonly env: Record<string, string | undefined>,
    cache: TokenCache | undefined,
    private readonly warn: (message: string) => void,
    private readonly onBehalfOf?: OnBehalfOf,
  ) {
    this.cache = onBehalfOf ? undefined : cache;
  }

  private value(name: string): string | undefined {
    const value = this.env[name];
    return value === undefined || value === '' ? undefined : value;
  }

  /**
   * Credentials for an operation: the first security alternative whose schemes all have
   * credentials configured. With none, the request goes out without credentials (as the
   * reference does) and a warning names the variables to set.
   */
  async forOperation(op: Operation, baseUrl: string): Promise<AppliedCredentials> {
    const applied: AppliedCredentials = { headers: {}, query: {}, cookies: {} };
    const alternatives = securityAlternatives(op);
    if (alternatives.length === 0) return applied;
    for (const requirement of alternatives) {
      const values = requirement.map((required) => this.configured(required));
      if (values.every((value) => value !== undefined)) {
        for (const [i, required] of requirement.entries()) {
          await this.apply(op.source, required, values[i]!, baseUrl, applied);
        }
        return applied;
      }
    }
    const wanted = alternatives[0]!.flatMap((required) => required.env);
    this.warn(
      `no credentials configured for ${op.method.toUpperCase()} ${op.path} of source "${op.source.name}"; sending it without credentials (set ${wanted.join(', ')})`,
    );
    return applied;
  }

  /**
   * The values of a scheme's variables (in `env` order), read once per run, when enough of
   * them are set for the scheme to be used; otherwise undefined.
   */
  private configured(required: RequiredScheme): (string | undefined)[] | undefined {
    const { scheme, env } = required;
    if (!scheme) return undefined;
    const values = env.map((name) => this.value(name));
    if (required.flow) {
      const [clientId, clientSecret, accessToken] = values;
      const usable =
        (clientId !== undefined && clientSecret !== undefined) || accessToken !== undefined;
      return usable ? values : undefined;
    }
    return env.length > 0 && values.every((value) => value !== undefined) ? values : undefined;
  }

  private async apply(
    source: OpenApiSource,
    required: RequiredScheme,
    values: (string | undefined)[],
    baseUrl: string,
    into: AppliedCredentials,
  ): Promise<void> {
    const scheme = required.scheme!;
    switch (scheme.type) {
      case 'apiKey': {
        const where =
          scheme.in === 'query' ? into.query : scheme.in === 'cookie' ? into.cookies : into.headers;
        where[String(scheme.name)] = values[0]!;
        return;
      }
      case 'http': {
        const kind = String(scheme.scheme ?? '').toLowerCase();
        if (kind === 'basic') {
          const pair = `${values[0]}:${values[1]}`;
          into.headers.authorization = `Basic ${Buffer.from(pair).toString('base64')}`;
        } else if (kind === 'bearer') into.headers.authorization = `Bearer ${values[0]}`;
        else into.headers.authorization = `${String(scheme.scheme)} ${values[0]}`;
        return;
      }
      default: {
        const { flow } = required;
        const [clientId, clientSecret] = flow ? values : [];
        if (this.onBehalfOf && (clientId === undefined || clientSecret === undefined)) {
          // A configured access token would act as the server itself, not as the caller.
          throw new TokenError(
            `security scheme "${required.name}" of source "${source.name}" has no client credentials to exchange the caller's token with (set ${required.env.slice(0, 2).join(', ')})`,
          );
        }
        const token =
          flow && clientId !== undefined && clientSecret !== undefined
            ? await this.token(
                source,
                required,
                tokenUrlOf(required, flow, baseUrl),
                clientId,
                clientSecret,
                baseUrl,
              )
            : values[values.length - 1]!; // …_ACCESS_TOKEN is always the last one
        into.headers.authorization = `Bearer ${token}`;
      }
    }
  }

  private token(
    source: OpenApiSource,
    required: RequiredScheme,
    /** absolute; a relative tokenUrl is resolved against the server URL, as OpenAPI says */
    tokenUrl: string,
    clientId: string,
    clientSecret: string,
    /** the API's server URL: the default resource of an exchange */
    baseUrl: string,
  ): Promise<string> {
    let key = `${tokenUrl}\n${clientId}\n${secretDigest(clientSecret)}\n${required.scopeKey}`;
    if (this.onBehalfOf) key += `\n${this.onBehalfOf.resource ?? baseUrl}`;
    const cached = this.cache?.get(key);
    if (cached !== undefined) return Promise.resolve(cached);
    let pending = this.runTokens.get(key) ?? this.cache?.inFlight.get(key);
    if (!pending) {
      pending = this.fetchToken(source, required, tokenUrl, clientId, clientSecret, baseUrl, key);
      const shared = this.cache?.inFlight;
      if (shared) {
        shared.set(key, pending);
        const settled = () => shared.delete(key);
        pending.then(settled, settled);
      }
    }
    this.runTokens.set(key, pending);
    return pending;
  }

  private async fetchToken(
    source: OpenApiSource,
    required: RequiredScheme,
    tokenUrl: string,
    clientId: string,
    clientSecret: string,
    baseUrl: string,
    key: string,
  ): Promise<string> {
    const what = () =>
      `${this.onBehalfOf ? 'token exchange' : 'token request'} for security scheme "${required.name}" of source "${source.name}" (${describeUrl(tokenUrl)}) failed`;
    let response: Awaited<ReturnType<HttpClient['send']>>;
    try {
      response = await this.http.send({
        method: 'POST',
        url: tokenUrl,
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
          authorization: clientSecretBasic(clientId, clientSecret),
        },
        body: this.onBehalfOf
          ? exchangeForm(required, this.onBehalfOf, baseUrl)
          : required.tokenForm,
      });
    } catch (error) {
      throw new TokenError(`${what()}: ${(error as Error).message}`);
    }
    const text = response.body.toString('utf8');
    if (response.status < 200 || response.status > 299)
      throw new TokenError(`${what()}: ${describeAnswer(response.status, text)}`);
    let body: JsonObject;
    try {
      body = JSON.parse(text) as JsonObject;
    } catch {
      throw new TokenError(`${what()}: the answer is not JSON`);
    }
    if (typeof body.access_token !== 'string' || body.access_token === '') {
      throw new TokenError(`${what()}: the answer has no access_token`);
    }
    this.cache?.set(key, body.access_token, body.expires_in);
    return body.access_token;
  }
}
