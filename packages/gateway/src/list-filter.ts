import { Transform, type TransformCallback } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { createParser, type EventSourceMessage, type EventSourceParser } from 'eventsource-parser';

export type ItemPredicate = (item: Record<string, unknown>) => boolean;

/** Largest list result the gateway rewrites (decoded); a bigger one fails closed. */
export const MAX_LIST_BYTES = 16 * 1024 * 1024;

/**
 * Removes the items the predicate rejects from `result.<key>` of a JSON-RPC response.
 * Returns undefined when the message is not such a response (it is then left as it was).
 */
function filterListResult(message: unknown, key: string, keep: ItemPredicate): unknown {
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return undefined;
  const result = (message as { result?: unknown }).result;
  if (result === null || typeof result !== 'object') return undefined;
  const items = (result as Record<string, unknown>)[key];
  if (!Array.isArray(items)) return undefined;
  const kept = items.filter((item) => item !== null && typeof item === 'object' && keep(item));
  return { ...message, result: { ...result, [key]: kept } };
}

/** Filters a complete JSON response body; anything unparseable is returned unchanged. */
export function filterJsonBody(body: Buffer, key: string, keep: ItemPredicate): Buffer {
  try {
    const filtered = filterListResult(JSON.parse(body.toString('utf8')), key, keep);
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
 */
export class SseListFilter extends Transform {
  private readonly parser: EventSourceParser;
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';
  private failure: Error | undefined;

  constructor(key: string, keep: ItemPredicate, maxEventBytes = MAX_LIST_BYTES) {
    super();
    this.parser = createParser({
      maxBufferSize: maxEventBytes,
      onEvent: (event) => {
        this.pending += serialize(event, rewrite(event.data, key, keep));
      },
      onRetry: (ms) => {
        this.pending += `retry: ${ms}\n`;
      },
      onComment: (comment) => {
        this.pending += `: ${comment}\n`;
      },
      onError: (error) => {
        if (error.type === 'max-buffer-size-exceeded') this.failure = error;
      },
    });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.parser.feed(this.decoder.write(chunk));
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

function rewrite(data: string, key: string, keep: ItemPredicate): string {
  let message: unknown;
  try {
    message = JSON.parse(data);
  } catch {
    return data;
  }
  const filtered = filterListResult(message, key, keep);
  return filtered === undefined ? data : JSON.stringify(filtered);
}
