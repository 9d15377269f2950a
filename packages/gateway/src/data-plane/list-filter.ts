import { Transform, type TransformCallback } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { createParser, type EventSourceMessage, type EventSourceParser } from 'eventsource-parser';
import type { Reservation } from './request.js';
import { ExchangeFailure } from './upstream-failure.js';

export type ItemPredicate = (item: unknown) => boolean;

/** How a list result is rewritten: the items of `result.<key>` the predicate rejects go. */
export interface ListFilter {
  key: string;
  keep: ItemPredicate;
  /**
   * Mark the result `cacheScope: "private"` (its `ttlMs` kept): it was filtered for its caller,
   * so no cache may share it with another (2026-07-28 server/utilities/caching).
   */
  privateScope: boolean;
}

/** Largest list result the gateway rewrites (decoded); a bigger one fails closed. */
export const MAX_LIST_BYTES = 16 * 1024 * 1024;

const tooLarge = () => new ExchangeFailure('unfilterable', 'list result too large to filter');
const overBudget = () =>
  new ExchangeFailure('answer_budget', 'buffered answers would exceed their memory budget');

/**
 * What filtering a list result of N bytes holds at its peak, in Ns: the bytes as received, the
 * text being parsed (or, for SSE, the event's data in the parser), the parsed items, and the
 * rewritten answer. The buffered-answer budget counts all four (measured: 60 concurrent 15 MB
 * lists, `test/answer-budget.test.ts`), so it bounds the memory filtering takes, not a quarter.
 */
export const LIST_WORKING_COPIES = 4;

/**
 * Makes `held` cover a list result of `bytes` about to be held and filtered: throws when they
 * are more than the gateway filters, or more than the buffered-answer budget has left.
 */
export function holdListBytes(held: Reservation, bytes: number): void {
  if (bytes > MAX_LIST_BYTES) throw tooLarge();
  const working = bytes * LIST_WORKING_COPIES;
  if (working > held.bytes && !held.resize(working)) throw overBudget();
}

/** Reads a whole list result, every byte covered by `held` before it is kept. */
export async function readList(source: AsyncIterable<Buffer>, held: Reservation): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of source) {
    size += chunk.length;
    holdListBytes(held, size);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

/**
 * Removes the items the predicate rejects from `result.<key>` of a JSON-RPC response.
 * Returns undefined when the message is not such a response (it is then left as it was).
 */
function filterListResult(message: unknown, filter: ListFilter): unknown {
  const { key, keep } = filter;
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return undefined;
  const result = (message as { result?: unknown }).result;
  if (result === null || typeof result !== 'object') return undefined;
  const items = (result as Record<string, unknown>)[key];
  if (!Array.isArray(items)) return undefined;
  const kept = items.filter(keep);
  const rewritten: Record<string, unknown> = { ...result, [key]: kept };
  if (filter.privateScope) rewritten.cacheScope = 'private';
  return { ...message, result: rewritten };
}

/** Filters a complete JSON response body; anything unparseable is returned unchanged. */
export function filterJsonBody(body: Buffer, filter: ListFilter): Buffer {
  try {
    const filtered = filterListResult(JSON.parse(body.toString('utf8')), filter);
    return filtered === undefined ? body : Buffer.from(JSON.stringify(filtered));
  } catch {
    return body;
  }
}

function serialize(event: EventSourceMessage, data: string): string {
  let out = '';
  if (event.id !== undefined) out += `id: ${event.id}\n`;
  if (event.event !== undefined) out += `event: ${event.event}\n`;
  for (const line of data.split('\n')) out += `data: ${line}\n`;
  return `${out}\n`;
}

/**
 * Filters list results inside a `text/event-stream` body event by event. The stream is parsed
 * as the HTML standard defines it (lines end with CR, LF or CRLF; a blank line ends an event)
 * and written back with LF; events are passed on as soon as they are complete and keep their
 * `id` and `event` fields (resumability depends on the ids), comments and `retry` too.
 *
 * With `held`, the bytes the parser may be holding are covered by the buffered-answer budget
 * (`LIST_WORKING_COPIES` times over): every byte since the last complete event (after one, what
 * is left of the chunk that ended it), so a long stream of small events holds little, and one
 * huge event all of its bytes.
 */
export class SseListFilter extends Transform {
  private readonly parser: EventSourceParser;
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';
  private failure: Error | undefined;
  /** Bytes fed since the last complete event, at most. */
  private unfinished = 0;
  private eventEnded = false;

  constructor(
    filter: ListFilter,
    private readonly held?: Reservation,
  ) {
    super();
    this.parser = createParser({
      maxBufferSize: MAX_LIST_BYTES,
      onEvent: (event) => {
        this.eventEnded = true;
        this.pending += serialize(event, rewrite(event.data, filter));
      },
      onRetry: (ms) => {
        this.pending += `retry: ${ms}\n`;
      },
      onComment: (comment) => {
        this.pending += `: ${comment}\n`;
      },
      onError: (error) => {
        if (error.type === 'max-buffer-size-exceeded') this.failure = tooLarge();
      },
    });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.unfinished += chunk.length;
    if (this.held && !this.held.resize(this.unfinished * LIST_WORKING_COPIES)) {
      callback(overBudget());
      return;
    }
    this.eventEnded = false;
    this.parser.feed(this.decoder.write(chunk));
    if (this.eventEnded) {
      this.unfinished = chunk.length;
      this.held?.resize(chunk.length * LIST_WORKING_COPIES);
    }
    this.release(callback);
  }

  override _flush(callback: TransformCallback): void {
    // A final CR may be a whole line ending; one more LF cannot end a line a second time. An
    // event still not ended by a blank line is discarded, as an EventSource client would.
    this.parser.feed(`${this.decoder.end()}\n`);
    this.release(callback);
  }

  private release(callback: TransformCallback): void {
    if (this.failure) {
      callback(this.failure);
      return;
    }
    if (this.pending !== '') {
      this.push(this.pending);
      this.pending = '';
    }
    callback();
  }
}

function rewrite(data: string, filter: ListFilter): string {
  let message: unknown;
  try {
    message = JSON.parse(data);
  } catch {
    return data;
  }
  const filtered = filterListResult(message, filter);
  return filtered === undefined ? data : JSON.stringify(filtered);
}
