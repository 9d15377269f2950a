import { Transform, type TransformCallback } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

export type ItemPredicate = (item: Record<string, unknown>) => boolean;

/**
 * Removes the items the predicate rejects from `result.<key>` of a JSON-RPC response.
 * Returns undefined when the message is not such a response (it is then left as it was).
 */
export function filterListResult(message: unknown, key: string, keep: ItemPredicate): unknown {
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

const EVENT_BOUNDARY = /\r\n\r\n|\n\n|\r\r/;

/**
 * Filters list results inside a `text/event-stream` body event by event. Events are passed on
 * as soon as they are complete; only events whose data is a list result are rewritten, and
 * they keep their `id:` and `event:` lines (resumability depends on the ids).
 */
export class SseListFilter extends Transform {
  private buffer = '';
  private readonly decoder = new StringDecoder('utf8');

  constructor(
    private readonly key: string,
    private readonly keep: ItemPredicate,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.buffer += this.decoder.write(chunk);
    let match = EVENT_BOUNDARY.exec(this.buffer);
    while (match) {
      const event = this.buffer.slice(0, match.index);
      const separator = match[0];
      this.buffer = this.buffer.slice(match.index + separator.length);
      this.push(this.rewrite(event) + separator);
      match = EVENT_BOUNDARY.exec(this.buffer);
    }
    callback();
  }

  override _flush(callback: TransformCallback): void {
    this.buffer += this.decoder.end();
    if (this.buffer) this.push(this.rewrite(this.buffer));
    callback();
  }

  private rewrite(event: string): string {
    const lines = event.split(/\r\n|\n|\r/);
    const data = lines
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).replace(/^ /, ''));
    if (data.length === 0) return event;
    let filtered: unknown;
    try {
      filtered = filterListResult(JSON.parse(data.join('\n')), this.key, this.keep);
    } catch {
      return event;
    }
    if (filtered === undefined) return event;
    const others = lines.filter((l) => !l.startsWith('data:'));
    return [...others, `data: ${JSON.stringify(filtered)}`].join('\n');
  }
}
