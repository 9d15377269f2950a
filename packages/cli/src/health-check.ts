import { type Dispatcher, fetch } from 'undici';
import { describeFetchError } from './stack/network.js';

/**
 * One GET of a health URL. Resolves with undefined when it answered 2xx within
 * `timeoutMs`, otherwise with what was wrong ("HTTP 503", "ECONNREFUSED", "no
 * answer within 5 s"). A stopped (SIGSTOP) process still has its socket
 * accept connections, so only the timeout tells it from a live one.
 */
export async function checkHealth(
  url: string,
  options: { dispatcher: Dispatcher; timeoutMs: number; signal?: AbortSignal },
): Promise<string | undefined> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
  try {
    const response = await fetch(url, { dispatcher: options.dispatcher, signal });
    await response.body?.cancel();
    return response.ok ? undefined : `HTTP ${response.status}`;
  } catch (error) {
    if (timeout.aborted) return `no answer within ${options.timeoutMs / 1000} s`;
    return describeFetchError(error);
  }
}
