import { UnavailableError } from '@mcp-identity/common';
import { fetch, type RequestInit, type Response } from 'undici';

/**
 * undici's fetch, with a network failure reported as the URL it tried and
 * why: undici alone says "fetch failed", naming neither.
 */
export async function fetchNamingUrl(url: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (error) {
    throw new UnavailableError(`cannot reach ${url}: ${describeFetchError(error)}`);
  }
}

/** The network reason under undici's "fetch failed" (ECONNREFUSED, a TLS error, …). */
export function describeFetchError(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const code = cause?.code;
  const message = cause?.message;
  if (code && message && !message.includes(code)) return `${code} (${message})`;
  return message || code || (error as Error).message;
}
