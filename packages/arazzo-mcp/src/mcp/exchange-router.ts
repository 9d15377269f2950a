import type { IncomingMessage, ServerResponse } from 'node:http';
import { type AppState, isJsonObject, jsonRpcError } from '@mcp-identity/common';
import {
  type AuthInfo,
  type CallToolResult,
  type JSONRPCErrorResponse,
  type JSONRPCMessage,
  type JSONRPCNotification,
  type JSONRPCRequest,
  type JSONRPCResultResponse,
  type MessageExtraInfo,
  ProtocolErrorCode,
  type RequestId,
  type Transport,
} from '@modelcontextprotocol/server';
import { isLegacyExchange } from './era.js';
import type { ModernExchanges } from './modern-exchanges.js';
import { postMessages, type Refusal } from './post-messages.js';
import { invalidParamsProblem } from './request-params.js';

// The messages here have passed JSONRPCMessageSchema (postMessages) or come from the SDK server
// itself, so their members tell their kind: the SDK's isJSONRPC… guards would parse each one
// again, a whole tool result included.
const isRequest = (message: JSONRPCMessage): message is JSONRPCRequest =>
  'method' in message && 'id' in message;
const isNotification = (message: JSONRPCMessage): message is JSONRPCNotification =>
  'method' in message && !('id' in message);
const isResponse = (
  message: JSONRPCMessage,
): message is JSONRPCResultResponse | JSONRPCErrorResponse => !('method' in message);

/**
 * Runs one `tools/call` (the catalog's `call`) for the caller `auth` describes: a result, or a
 * ProtocolError for an unknown tool.
 */
export type ToolCaller = (
  name: string,
  args: Record<string, unknown> | undefined,
  auth: AuthInfo | undefined,
) => Promise<CallToolResult>;

/**
 * A `tools/call` whose params are just `name` (a string) and optionally `arguments` (an
 * object): every client's shape, which the SDK's schema accepts as it stands. Anything else
 * (`_meta`, a task, a malformed member) is left to the SDK server.
 */
type PlainToolCall = JSONRPCRequest & {
  params: { name: string; arguments?: Record<string, unknown> };
};

function isPlainToolCall(request: JSONRPCRequest): request is PlainToolCall {
  if (request.method !== 'tools/call') return false;
  const { params } = request;
  if (typeof params !== 'object' || params === null || typeof params.name !== 'string') {
    return false;
  }
  for (const key in params) if (key !== 'name' && key !== 'arguments') return false;
  const args = params.arguments;
  return args === undefined || isJsonObject(args);
}

/** A thrown error as the SDK's Protocol answers it. */
function errorAnswer(error: unknown): JSONRPCErrorResponse['error'] {
  const { code, message, data } = error as { code?: unknown; message?: string; data?: unknown };
  return {
    code: Number.isSafeInteger(code) ? (code as number) : ProtocolErrorCode.InternalError,
    message: message ?? 'Internal error',
    ...(data !== undefined && { data }),
  };
}

/** Where a request the server is working on came from, and the id its client gave it. */
interface Origin {
  exchange: JsonExchange;
  clientId: RequestId;
}

/**
 * Serves every stateless Streamable HTTP exchange, in either protocol era. A POST carrying the
 * per-request `_meta` envelope of MCP 2026-07-28 (or a header or body claiming it) goes to the
 * SDK's modern entry (`modern`, ModernExchanges), classified by the SDK's own
 * `classifyInboundRequest`; every other (legacy-era) exchange is served here with ONE MCP SDK
 * `Server` (and so one JSON Schema validator and one set of handlers for the process):
 * `server.connect(router)` once, then `router.handle(...)` for every POST.
 *
 * Each POST is checked as the MCP transport specification asks of a server without sessions
 * that answers in JSON (see postMessages), its requests are passed to the shared server under
 * ids unique in the process, and the answers are written back to the POST they came from under
 * the ids its client chose, in one write once all are in. So two clients may use the same
 * JSON-RPC id at the same time without one receiving the other's answer. Written on node:http
 * directly: the SDK's Node transport converts every request and response to Web objects and
 * back, and makes a transport object, on every tool call.
 */
export class McpExchangeRouter implements Transport {
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;

  private lastId = 0;
  private readonly inFlight = new Map<number, Origin>();

  /**
   * `callTool` answers plain `tools/call` requests (isPlainToolCall) itself, as the SDK server
   * would with the catalog's handler, without the SDK's per-request machinery (an
   * AbortController, the request checked against five of its schemas and the result against
   * one); every other message goes to the server.
   */
  constructor(
    private readonly callTool: ToolCaller,
    private readonly modern: ModernExchanges,
  ) {}

  async start(): Promise<void> {}

  async close(): Promise<void> {
    this.inFlight.clear();
    this.onclose?.();
  }

  /** Called by the shared server for every message it emits. */
  async send(message: JSONRPCMessage): Promise<void> {
    // An answer in JSON has no room for the notifications or requests a handler sends on the
    // way (progress, say), nor does stateless HTTP have a stream for unrelated ones: only
    // responses travel.
    if (!isResponse(message)) return;
    if (typeof message.id !== 'number') return;
    const origin = this.inFlight.get(message.id);
    // The client went away; nobody is listening for the answer.
    if (origin === undefined) return;
    this.inFlight.delete(message.id);
    origin.exchange.answer({ ...message, id: origin.clientId });
  }

  /**
   * Handles one HTTP POST. `parsedBody` is the JSON body when already parsed; the request's
   * `auth` (the SDK's AuthInfo) reaches the handlers. Once `app.closing`, answers ask the
   * client to close its connection, so that keep-alive connections do not hold shutdown.
   */
  async handle(
    request: IncomingMessage & { auth?: AuthInfo },
    response: ServerResponse,
    parsedBody: unknown,
    app?: AppState,
  ): Promise<void> {
    if (!isLegacyExchange(request, parsedBody)) {
      await this.modern.serve(request, response, parsedBody, app);
      return;
    }
    const read = postMessages(request, parsedBody);
    if (read.refusal !== undefined) {
      this.onerror?.(new Error(read.refusal.message));
      writeRefusal(response, read.refusal, app);
      return;
    }
    const extra: MessageExtraInfo = { authInfo: request.auth };
    const { messages } = read;
    if (!messages.some(isRequest)) {
      for (const message of messages) this.receive(undefined, message, extra);
      if (app?.closing) response.shouldKeepAlive = false;
      response.writeHead(202);
      response.end();
      return;
    }
    const exchange = new JsonExchange(response, app);
    for (const message of messages) {
      if (isRequest(message)) exchange.expect(message.id);
    }
    const ids: number[] = [];
    response.once('close', () => {
      for (const id of ids) this.inFlight.delete(id);
    });
    for (const message of messages) {
      const id = this.receive(exchange, message, extra);
      if (id !== undefined) ids.push(id);
    }
  }

  /** Passes one message to the server; the router id it got when it is a request. */
  private receive(
    exchange: JsonExchange | undefined,
    message: JSONRPCMessage,
    extra: MessageExtraInfo,
  ): number | undefined {
    if (exchange !== undefined && isRequest(message)) {
      if (isPlainToolCall(message)) {
        void this.answerToolCall(exchange, message, extra.authInfo);
        return undefined;
      }
      const problem = invalidParamsProblem(message);
      if (problem !== undefined) {
        const error = { code: ProtocolErrorCode.InvalidParams, message: problem };
        exchange.answer({ jsonrpc: '2.0', id: message.id, error });
        return undefined;
      }
      this.lastId += 1;
      this.inFlight.set(this.lastId, { exchange, clientId: message.id });
      this.onmessage?.({ ...message, id: this.lastId }, extra);
      return this.lastId;
    }
    if (!isNotification(message)) return undefined; // answers to requests never sent
    // A cancellation names its client's id, which is unique neither across clients nor, here,
    // to an exchange (it arrives in a POST of its own): it cannot be attributed safely, so it
    // is dropped. The request runs on; its answer is discarded if its client has gone.
    if (message.method === 'notifications/cancelled') return undefined;
    this.onmessage?.(message, extra);
    return undefined;
  }

  private async answerToolCall(
    exchange: JsonExchange,
    request: PlainToolCall,
    auth: AuthInfo | undefined,
  ): Promise<void> {
    const { id, params } = request;
    try {
      const result = await this.callTool(params.name, params.arguments, auth);
      exchange.answer({ result, jsonrpc: '2.0', id });
    } catch (error) {
      exchange.answer({ jsonrpc: '2.0', id, error: errorAnswer(error) });
    }
  }
}

/**
 * The answers one POST waits for, keyed by its client's ids (a batch repeating an id gets one
 * answer for it, as from the SDK's transport); written as one JSON body once all are in: the
 * single answer itself, or the array of them in the order the requests came.
 */
class JsonExchange {
  private readonly answers = new Map<RequestId, JSONRPCMessage | undefined>();
  private waiting = 0;

  constructor(
    private readonly response: ServerResponse,
    private readonly app: AppState | undefined,
  ) {}

  expect(id: RequestId): void {
    if (this.answers.has(id)) return;
    this.answers.set(id, undefined);
    this.waiting += 1;
  }

  answer(message: JSONRPCMessage & { id: RequestId }): void {
    if (!this.answers.has(message.id) || this.answers.get(message.id) !== undefined) return;
    this.answers.set(message.id, message);
    this.waiting -= 1;
    if (this.waiting > 0) return;
    const all = [...this.answers.values()];
    writeJson(this.response, 200, all.length === 1 ? all[0] : all, this.app);
  }
}

function writeRefusal(response: ServerResponse, refusal: Refusal, app?: AppState): void {
  writeJson(response, refusal.status, jsonRpcError(null, refusal.code, refusal.message), app);
}

/** A JSON answer written in one piece; once `app.closing`, it asks the client to close. */
export function writeJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  app: AppState | undefined,
  contentType = 'application/json',
): void {
  // One write: headers and body leave in a single packet.
  const text = JSON.stringify(body);
  // Node answers `connection: close` and closes the connection after this answer.
  if (app?.closing) response.shouldKeepAlive = false;
  response.writeHead(status, {
    'content-type': contentType,
    'content-length': Buffer.byteLength(text),
  });
  response.end(text);
}
