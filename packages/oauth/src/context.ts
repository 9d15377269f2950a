import type { ClientIdMetadataResolver } from '@mcp-identity/common';
import type { IssuerResolver } from './issuer.js';
import type { ResolvedOptions } from './options.js';

/** What every route of the authorization server needs. */
export interface ServerContext extends ResolvedOptions {
  issuer: IssuerResolver;
  /** Fetches Client ID Metadata Documents; undefined when they are turned off. */
  clientDocuments: ClientIdMetadataResolver | undefined;
}

/**
 * A single-valued string parameter. Repeated parameters are refused (RFC 6749 §3.1), and a
 * parameter present with an empty value counts as absent.
 */
export function singleParam(
  source: unknown,
  name: string,
): { ok: true; value: string | undefined } | { ok: false } {
  if (source === null || typeof source !== 'object') return { ok: true, value: undefined };
  const value = (source as Record<string, unknown>)[name];
  if (value === undefined || value === '') return { ok: true, value: undefined };
  if (typeof value !== 'string') return { ok: false };
  return { ok: true, value };
}
