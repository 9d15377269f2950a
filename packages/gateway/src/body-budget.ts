import type { IncomingHttpHeaders, ServerResponse } from 'node:http';

/** Whether a request announces a body (RFC 9112 §6.3): a length or a transfer coding. */
export function announcesBody(headers: IncomingHttpHeaders): boolean {
  return headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined;
}

/**
 * A global cap on request body bytes being received at once, across all proxies: a request
 * that would exceed it is answered 503 instead of growing memory. Bytes are reserved from the
 * declared length (or the per-request cap when none is declared) before anything is read.
 */
export class BodyBudget {
  private used = 0;

  constructor(readonly capBytes: number) {}

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
    if (this.used + bytes > this.capBytes) return false;
    this.used += bytes;
    // 'close' comes once: `on` spares the wrapper `once` would make.
    response.on('close', () => {
      this.used = Math.max(0, this.used - bytes);
    });
    return true;
  }
}
