import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type {
  Transport,
  TransportSendOptions,
} from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ErrorCode,
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type MessageExtraInfo,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { invalidParamsProblem } from './request-params.js';

/** Where a request the server is working on came from, and the id its client gave it. */
interface Origin {
  exchange: StreamableHTTPServerTransport;
  clientId: RequestId;
}

/**
 * Serves many stateless Streamable HTTP exchanges with ONE MCP SDK `Server` (and so one
 * JSON Schema validator and one set of handlers for the process): `server.connect(router)`
 * once, then `router.handle(...)` for every POST.
 *
 * Each HTTP POST still gets its own SDK transport, which does everything the MCP transport
 * specification asks of the HTTP side (Accept and Content-Type checks, protocol version header,
 * batches, 202 for notifications). The transport's messages are passed to the shared server
 * under ids unique in the process, and each response is sent back to the exchange it came from
 * under the id its client chose. So two clients may use the same JSON-RPC id at the same time
 * without one receiving the other's answer.
 */
export class McpExchangeRouter implements Transport {
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;

  private lastId = 0;
  private readonly inFlight = new Map<number, Origin>();

  async start(): Promise<void> {}

  async close(): Promise<void> {
    this.inFlight.clear();
    this.onclose?.();
  }

  /** Called by the shared server for every message it emits. */
  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const isResponse = isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message);
    const routerId = isResponse ? message.id : options?.relatedRequestId;
    // Stateless HTTP has no stream for messages unrelated to a request (list_changed, say).
    if (typeof routerId !== 'number') return;
    const origin = this.inFlight.get(routerId);
    // The client went away; nobody is listening for the answer.
    if (origin === undefined) return;
    if (isResponse) {
      this.inFlight.delete(routerId);
      await origin.exchange.send({ ...message, id: origin.clientId });
    } else {
      await origin.exchange.send(message, { relatedRequestId: origin.clientId });
    }
  }

  /**
   * Handles one HTTP POST. `parsedBody` is the JSON body when already parsed; the request's
   * `auth` (the SDK's AuthInfo) reaches the handlers.
   */
  async handle(request: IncomingMessage, response: ServerResponse, parsedBody: unknown) {
    const exchange = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    const ids: number[] = [];
    exchange.onmessage = (message, extra) => this.receive(exchange, ids, message, extra);
    exchange.onerror = (error) => this.onerror?.(error);
    response.on('close', () => {
      for (const id of ids) this.inFlight.delete(id);
      void exchange.close();
    });
    await exchange.handleRequest(request, response, parsedBody);
  }

  private receive(
    exchange: StreamableHTTPServerTransport,
    ids: number[],
    message: JSONRPCMessage,
    extra: MessageExtraInfo | undefined,
  ): void {
    if (isJSONRPCRequest(message)) {
      const problem = invalidParamsProblem(message);
      if (problem !== undefined) {
        const error = { code: ErrorCode.InvalidParams, message: problem };
        exchange
          .send({ jsonrpc: '2.0', id: message.id, error })
          .catch((failure: Error) => this.onerror?.(failure));
        return;
      }
      this.lastId += 1;
      ids.push(this.lastId);
      this.inFlight.set(this.lastId, { exchange, clientId: message.id });
      this.onmessage?.({ ...message, id: this.lastId }, extra);
      return;
    }
    if (!isJSONRPCNotification(message)) return; // answers to requests this server never sends
    // A cancellation names its client's id, which is unique neither across clients nor, here,
    // to an exchange (it arrives in a POST of its own): it cannot be attributed safely, so it
    // is dropped. The request runs on; its answer is discarded if its client has gone.
    if (message.method === 'notifications/cancelled') return;
    this.onmessage?.(message, extra);
  }
}
