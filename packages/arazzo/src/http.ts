/**
 * Outgoing HTTP for document loading, token requests and API calls: one undici Agent (a
 * keep-alive pool per origin), a per-request timeout covering headers and body, and a cap on
 * the response size.
 */
import { Agent, request } from 'undici';

export interface HttpSettings {
  tlsVerify: boolean;
  timeoutMs: number;
  maxResponseBytes: number;
}

export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024;

export interface HttpRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
}

export interface HttpResponse {
  status: number;
  /** lower-cased names; repeated headers joined with ", " */
  headers: Record<string, string>;
  body: Buffer;
}

/** A transport failure: nothing usable came back. */
export class HttpError extends Error {}

/** `ARAZZO_DISABLE_TLS_VERIFY` disables verification only when it is exactly `1` after trim. */
export function tlsVerifyFromEnv(env: Record<string, string | undefined>): boolean {
  return env.ARAZZO_DISABLE_TLS_VERIFY?.trim() !== '1';
}

/** The URL without query or fragment, for messages (a query may carry an API key). */
export function describeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return url.replace(/[?#].*$/, '');
  }
}

function causeOf(error: unknown): string {
  const err = error as { code?: string; message?: string; cause?: unknown };
  const inner = err.cause as { code?: string; message?: string } | undefined;
  const code = err.code ?? inner?.code;
  const message = inner?.message ?? err.message ?? String(error);
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code && !message.includes(code)) return `${message} (${code})`;
  return message;
}

function flattenHeaders(
  raw: Record<string, string | string[] | undefined>,
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

export class HttpClient {
  private readonly agent: Agent;

  constructor(readonly settings: HttpSettings) {
    this.agent = new Agent({
      keepAliveTimeout: 30_000,
      connect: {
        timeout: settings.timeoutMs,
        ...(settings.tlsVerify ? {} : { rejectUnauthorized: false }),
      },
    });
  }

  async send(req: HttpRequest): Promise<HttpResponse> {
    const { timeoutMs, maxResponseBytes } = this.settings;
    const where = `${req.method.toUpperCase()} ${describeUrl(req.url)}`;
    // undici's headers and body timeouts bound each wait; the deadline bounds the whole exchange
    // (a body trickling in slowly). Cheaper per request than an AbortSignal timer.
    const deadline = Date.now() + timeoutMs;
    const timedOut = () => new HttpError(`${where}: timed out after ${timeoutMs} ms`);
    try {
      const response = await request(req.url, {
        dispatcher: this.agent,
        method: req.method.toUpperCase() as 'GET',
        headers: req.headers,
        body: req.body,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      const declared = Number(response.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxResponseBytes) {
        response.body.destroy();
        throw new HttpError(
          `${where}: response of ${declared} bytes exceeds the limit of ${maxResponseBytes} bytes`,
        );
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of response.body) {
        size += (chunk as Buffer).length;
        if (size > maxResponseBytes) {
          response.body.destroy();
          throw new HttpError(`${where}: response exceeds the limit of ${maxResponseBytes} bytes`);
        }
        if (Date.now() > deadline) {
          response.body.destroy();
          throw timedOut();
        }
        chunks.push(chunk as Buffer);
      }
      return {
        status: response.statusCode,
        headers: flattenHeaders(response.headers),
        body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks),
      };
    } catch (error) {
      if (error instanceof HttpError) throw error;
      const code = (error as { code?: string }).code;
      if (
        code === 'UND_ERR_HEADERS_TIMEOUT' ||
        code === 'UND_ERR_BODY_TIMEOUT' ||
        code === 'UND_ERR_CONNECT_TIMEOUT'
      ) {
        throw timedOut();
      }
      throw new HttpError(`${where}: ${causeOf(error)}`);
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

/** The response body as JSON when its media type says so (falling back to text), else text. */
export function decodeBody(response: HttpResponse): unknown {
  if (response.body.length === 0) return null;
  const text = response.body.toString('utf8');
  const type = response.headers['content-type'] ?? '';
  if (/[/+]json\b/i.test(type) || (type === '' && /^\s*[{[]/.test(text))) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}
