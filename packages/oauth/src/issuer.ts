import { InvalidArgumentError } from '@mcp-identity/common';
import type { FastifyRequest } from 'fastify';
import { BadRequestError } from './errors.js';

export interface IssuerOptions {
  /** Fixes the issuer (scheme, host, path base); request headers are then ignored. */
  publicUrl?: string;
  /** Honour `X-Forwarded-Proto`, `X-Forwarded-Host` and `X-Forwarded-Prefix`. Off by default. */
  trustProxy?: boolean;
  /** Path base the routes are mounted under (the plugin's prefix). */
  basePath?: string;
}

export type IssuerResolver = (request: FastifyRequest) => string;

const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;
const PATH_BASE = /^(?:\/[A-Za-z0-9\-._~!$&'()*+,;=:@%]+)*\/?$/;

function withoutTrailingSlash(value: string): string {
  return value.replace(/\/+$/, '');
}

/** Validates a configured public URL and returns it as an issuer (no trailing `/`). */
export function normalizePublicUrl(publicUrl: string): string {
  let url: URL;
  try {
    url = new URL(publicUrl);
  } catch {
    throw new InvalidArgumentError(`publicUrl is not a URL: ${publicUrl}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new InvalidArgumentError('publicUrl must be an http or https URL');
  }
  if (url.search || url.hash || url.username || url.password) {
    throw new InvalidArgumentError('publicUrl must not carry credentials, a query or a fragment');
  }
  return withoutTrailingSlash(`${url.origin}${url.pathname}`);
}

export function normalizeBasePath(basePath: string | undefined): string {
  const value = withoutTrailingSlash(basePath ?? '');
  if (value !== '' && !PATH_BASE.test(value))
    throw new InvalidArgumentError(`invalid path base: ${basePath}`);
  return value;
}

function firstHeader(request: FastifyRequest, name: string): string | undefined {
  const raw = request.headers[name];
  const value = Array.isArray(raw) ? raw[0] : raw;
  return value?.split(',')[0]?.trim() || undefined;
}

/**
 * `<issuer>` is scheme, host and path base of the request with any trailing `/`
 * removed. Forwarded headers are believed only when the operator says a proxy sets them.
 */
export function createIssuerResolver(options: IssuerOptions): IssuerResolver {
  const basePath = normalizeBasePath(options.basePath);
  if (options.publicUrl !== undefined) {
    const fixed = normalizePublicUrl(options.publicUrl);
    return () => fixed;
  }
  const trustProxy = options.trustProxy === true;
  return (request) => {
    const encrypted = 'encrypted' in request.raw.socket && request.raw.socket.encrypted === true;
    let scheme = encrypted ? 'https' : 'http';
    let host = firstHeader(request, 'host');
    let prefix = '';
    if (trustProxy) {
      const proto = firstHeader(request, 'x-forwarded-proto')?.toLowerCase();
      if (proto === 'http' || proto === 'https') scheme = proto;
      host = firstHeader(request, 'x-forwarded-host') ?? host;
      const forwardedPrefix = firstHeader(request, 'x-forwarded-prefix');
      if (forwardedPrefix !== undefined) {
        if (!PATH_BASE.test(forwardedPrefix))
          throw new BadRequestError('Invalid X-Forwarded-Prefix');
        prefix = withoutTrailingSlash(forwardedPrefix);
      }
    }
    if (host === undefined || !HOST.test(host)) throw new BadRequestError('Invalid Host header');
    return withoutTrailingSlash(`${scheme}://${host.toLowerCase()}${prefix}${basePath}`);
  };
}
