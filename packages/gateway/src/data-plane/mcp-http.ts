import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AppState } from '@mcp-identity/common';
import { announcesBody } from './body-budget.js';
import type { HeaderList } from './forwarding-headers.js';

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

let lastRequestId = 0;

/**
 * One HTTP request to a proxy's `<context>/mcp`, served on the node:http objects themselves:
 * the request, its body once read, and the two ways the data plane answers (the upstream's
 * head, or a JSON body of its own).
 */
export class McpHttp {
  /** The request body once read; undefined while unread (and for every method but POST). */
  body: Buffer | undefined = undefined;
  private requestId: string | undefined = undefined;
  private own: Record<string, string> | undefined = undefined;

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
    // Node refuses a request with both a Content-Length and a Transfer-Encoding (RFC 9112
    // §6.3), so one with a Content-Length of 0 has no body.
    return this.body === undefined && announcesBody(headers) && headers['content-length'] !== '0';
  }

  /**
   * Headers the gateway adds to whichever answer this request gets (CORS, `connection`); they
   * replace the upstream's of the same name.
   */
  get ownHeaders(): Readonly<Record<string, string>> | undefined {
    return this.own;
  }

  /**
   * Adds one of the gateway's own headers. Kept here rather than set on the response: a
   * response with headers already set makes Node merge and re-validate every header of the
   * head one by one.
   */
  setHeader(name: string, value: string): void {
    this.own ??= {};
    this.own[name] = value;
  }

  /** Asks the client to close the connection after this answer. */
  closeConnection(): void {
    this.setHeader('connection', 'close');
  }

  /** Starts an answer with these headers (none named in `ownHeaders`) and the gateway's own. */
  writeHead(status: number, headers: HeaderList): void {
    const { own } = this;
    if (own) for (const name in own) headers.push(name, own[name] as string);
    // While the server shuts down, keep-alive connections must not outlive this answer.
    if (this.app.closing && own?.connection === undefined) headers.push('connection', 'close');
    this.response.writeHead(status, headers);
  }

  /** A whole JSON answer from the gateway itself. */
  sendJson(status: number, body: unknown, headers?: Readonly<Record<string, string>>): void {
    const payload = JSON.stringify(body);
    const head: HeaderList = [];
    if (headers) for (const name in headers) head.push(name, headers[name] as string);
    head.push(
      'content-type',
      JSON_CONTENT_TYPE,
      'content-length',
      String(Buffer.byteLength(payload)),
    );
    this.writeHead(status, head);
    this.response.end(payload);
  }

  /** An answer without a body (an OPTIONS request's 204). */
  sendEmpty(status: number): void {
    // A body nobody reads is not worth reading: the connection closes after the answer.
    if (this.hasUnreadBody) this.closeConnection();
    this.writeHead(status, []);
    this.response.end();
  }
}
