import type {
  IncomingHttpHeaders,
  IncomingMessage,
  OutgoingHttpHeaders,
  ServerResponse,
} from 'node:http';
import type { AppState } from '@mcp-identity/common';

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** Whether a request announces a body (RFC 9112 §6.3): a length or a transfer coding. */
export function announcesBody(headers: IncomingHttpHeaders): boolean {
  return headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined;
}

let lastRequestId = 0;

/**
 * One HTTP request to a proxy's `<context>/mcp`, served on the node:http objects themselves:
 * the request, its body once read, and the two ways the data plane answers (the upstream's
 * head, or a JSON body of its own).
 */
export class McpHttp {
  /** The request body once read; undefined while unread (and for GET and HEAD). */
  body: Buffer | undefined = undefined;
  private requestId: string | undefined = undefined;
  private ownHeaders: Record<string, string> | undefined = undefined;

  constructor(
    readonly request: IncomingMessage,
    readonly response: ServerResponse,
    private readonly app: AppState,
  ) {}

  /**
   * An id for this request's log lines (the `reqId` of Fastify's lines), made the first time a
   * line needs it: most requests log nothing but their audit line.
   */
  get id(): string {
    this.requestId ??= `mcp-${(++lastRequestId).toString(36)}`;
    return this.requestId;
  }

  get method(): string {
    return this.request.method as string;
  }

  get headers(): IncomingHttpHeaders {
    return this.request.headers;
  }

  /** Whether an answer has begun (headers written), by the gateway or from the upstream. */
  get answered(): boolean {
    return this.response.headersSent;
  }

  /** Whether the client is still sending a body the gateway has not read (and will not). */
  get hasUnreadBody(): boolean {
    const { headers } = this.request;
    return (
      this.body === undefined &&
      (headers['transfer-encoding'] !== undefined ||
        (headers['content-length'] !== undefined && headers['content-length'] !== '0'))
    );
  }

  /**
   * Adds a header to whichever answer this request gets (CORS headers, `connection`). Kept
   * here rather than set on the response: a response with headers already set makes Node merge
   * and re-validate every header of the upstream's head one by one.
   */
  setHeader(name: string, value: string): void {
    this.ownHeaders ??= {};
    this.ownHeaders[name] = value;
  }

  /** Asks the client to close the connection after this answer. */
  closeConnection(): void {
    this.setHeader('connection', 'close');
  }

  /** Starts an answer with these headers; the gateway's own ones win over them. */
  writeHead(status: number, headers: OutgoingHttpHeaders): void {
    const own = this.ownHeaders;
    if (own) for (const name in own) headers[name] = own[name];
    // While the server shuts down, keep-alive connections must not outlive this answer.
    if (this.app.closing) headers.connection = 'close';
    this.response.writeHead(status, headers);
  }

  /** A whole JSON answer from the gateway itself. */
  sendJson(status: number, body: unknown, headers?: Readonly<Record<string, string>>): void {
    const payload = JSON.stringify(body);
    const head: OutgoingHttpHeaders = { ...headers };
    head['content-type'] = JSON_CONTENT_TYPE;
    head['content-length'] = Buffer.byteLength(payload);
    this.writeHead(status, head);
    this.response.end(payload);
  }

  /** An answer without a body (a CORS preflight's 204). */
  sendEmpty(status: number): void {
    this.writeHead(status, {});
    this.response.end();
  }
}
