import { rootCertificates } from 'node:tls';
import { Agent } from 'undici';
import type { TlsTrust } from '../config.js';

/**
 * The connection pool for one key manager endpoint: the system's CAs plus the configured one,
 * or no verification when `skipTlsVerify` (local self-signed use only).
 */
export function trustedAgent(trust: TlsTrust, timeoutMs: number): Agent {
  const connect: { rejectUnauthorized: boolean; timeout: number; ca?: string[] } = {
    rejectUnauthorized: !trust.skipTlsVerify,
    // A connection attempt outlives an aborted fetch: bound it by the same timeout.
    timeout: timeoutMs,
  };
  if (trust.caCertificate) connect.ca = [...rootCertificates, trust.caCertificate];
  return new Agent({ connect });
}
