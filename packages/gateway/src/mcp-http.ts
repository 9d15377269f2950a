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

  /** Asks the client to close the connection after this answer. */
  closeConnection(): void {
    this.response.setHeader('connection', 'close');
  }

  /** Starts an answer with these headers (merged with those already set, such as CORS). */
  writeHead(status: number, headers: OutgoingHttpHeaders): void {
    // While the server shuts down, keep-alive connections must not outlive this answer.
    if (this.app.closing) headers.connection = 'close';
    this.response.writeHead(status, headers);
  }

  /** A whole JSON answer from the gateway itself. */
  sendJson(status: number, body: unknown, headers?: Readonly<Record<string, string>>): void {
    const payload = JSON.stringify(body);
    const { response } = this;
    if (headers) for (const name in headers) response.setHeader(name, headers[name] as string);
    response.setHeader('content-type', JSON_CONTENT_TYPE);
    response.setHeader('content-length', Buffer.byteLength(payload));
    if (this.app.closing) response.setHeader('connection', 'close');
    response.statusCode = status;
    response.end(payload);
  }

  /** An answer without a body (a CORS preflight's 204). */
  sendEmpty(status: number): void {
    if (this.app.closing) this.response.setHeader('connection', 'close');
    this.response.statusCode = status;
    this.response.end();
  }
}
