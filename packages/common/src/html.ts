import type { FastifyReply } from 'fastify';

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes text for HTML element content and quoted attribute values. */
export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (char) => ESCAPES[char] ?? char);
}

/**
 * Headers every HTML page we serve carries: no framing (clickjacking on login
 * forms), no referrer (authorize URLs carry state), no caching (pages carry
 * one-time CSRF tokens), and scripts limited to none. `imageOrigins` adds
 * origins images may load from (a registered client's logo), nothing else.
 */
export function setHtmlSecurityHeaders(
  reply: FastifyReply,
  options: { imageOrigins?: readonly string[] } = {},
): FastifyReply {
  const images = ["'self'", 'data:', ...(options.imageOrigins ?? [])].join(' ');
  return reply
    .header('content-type', 'text/html; charset=utf-8')
    .header(
      'content-security-policy',
      `default-src 'none'; style-src 'unsafe-inline'; img-src ${images}; frame-ancestors 'none'; base-uri 'none'`,
    )
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-store')
    .header('x-content-type-options', 'nosniff');
}
