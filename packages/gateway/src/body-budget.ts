import type { IncomingHttpHeaders } from 'node:http';

/**
 * A global cap on request body bytes being received at once, across all proxies: a request
 * that would exceed it is answered 503 instead of growing memory. Bytes are reserved from the
 * declared length (or the per-request cap when none is declared) before anything is read.
 */
export class BodyBudget {
  private used = 0;

  constructor(readonly capBytes: number) {}

  /** What a request with these headers reserves: its declared length, capped at `maxBodyBytes`. */
  reservation(headers: IncomingHttpHeaders, maxBodyBytes: number): number {
    const declared = Number(headers['content-length']);
    return Math.min(
      Number.isFinite(declared) && declared >= 0 ? declared : maxBodyBytes,
      maxBodyBytes,
    );
  }

  tryReserve(bytes: number): boolean {
    if (this.used + bytes > this.capBytes) return false;
    this.used += bytes;
    return true;
  }

  release(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
  }

  get inUse(): number {
    return this.used;
  }
}
