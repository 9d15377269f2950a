import type { IncomingHttpHeaders, ServerResponse } from 'node:http';

/** Whether a request announces a body (RFC 9112 §6.3): a length or a transfer coding. */
export function announcesBody(headers: IncomingHttpHeaders): boolean {
  return headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined;
}

/**
 * A process-wide cap on bytes held at once for one purpose, across all proxies: request bodies
 * being received (`BodyBudget`), upstream answers buffered to be filtered. Bytes are taken
 * before they are held; what would exceed the cap is refused (503) instead of growing memory.
 */
export class ByteBudget {
  private used = 0;

  constructor(readonly capBytes: number) {}

  /** Bytes held now. */
  get usedBytes(): number {
    return this.used;
  }

  /** Takes `bytes` if they fit: true; false, taking nothing, when they would exceed the cap. */
  take(bytes: number): boolean {
    if (this.used + bytes > this.capBytes) return false;
    this.used += bytes;
    return true;
  }

  give(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
  }
}

/** The bytes one exchange holds from a budget, resized as it reads; `release` gives them back. */
export class Reservation {
  private held = 0;

  constructor(private readonly budget: ByteBudget) {}

  get bytes(): number {
    return this.held;
  }

  /** Makes the reservation `bytes` in all: false, leaving it as it was, when it cannot grow. */
  resize(bytes: number): boolean {
    if (bytes > this.held && !this.budget.take(bytes - this.held)) return false;
    if (bytes < this.held) this.budget.give(this.held - bytes);
    this.held = bytes;
    return true;
  }

  release(): void {
    this.resize(0);
  }
}

/**
 * The request body budget: bytes are reserved from the declared length (or the per-request cap
 * when none is declared) before anything is read.
 */
export class BodyBudget extends ByteBudget {
  /**
   * Admits the body a request with these headers announces, if any: its bytes (the declared
   * length, capped at `maxBodyBytes`) are held until `response` closes. False, holding nothing,
   * when they would exceed the cap.
   */
  admit(headers: IncomingHttpHeaders, maxBodyBytes: number, response: ServerResponse): boolean {
    if (!announcesBody(headers)) return true;
    const declared = Number(headers['content-length']);
    const bytes = Math.min(
      Number.isFinite(declared) && declared >= 0 ? declared : maxBodyBytes,
      maxBodyBytes,
    );
    if (!this.take(bytes)) return false;
    // 'close' comes once: `on` spares the wrapper `once` would make.
    response.on('close', () => this.give(bytes));
    return true;
  }
}
