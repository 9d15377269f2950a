import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { randomToken } from '@mcp-identity/common';

/**
 * The credential between the gateway and the SCIM MCP server (the proxy's `upstream.auth`):
 * the gateway adds this header to every upstream request, and the SCIM MCP
 * server refuses every /mcp request without it, so it answers only the gateway.
 */
export const UPSTREAM_AUTH_HEADER = 'X-Gateway-Auth';

/** Generates the shared secret once (mode 0600) and returns its file. */
export function ensureUpstreamSecret(file: string): string {
  try {
    if (readFileSync(file, 'utf8').trim() !== '') return file;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, `${randomToken(32)}\n`, { mode: 0o600 });
  return file;
}

/** A secret file's value: its first line, trimmed (as the gateway and the server read it). */
export function readSecretFile(file: string): string {
  return readFileSync(file, 'utf8').split('\n')[0]!.trim();
}

/** The SCIM MCP server's flags that make it require the header. */
export function requireHeaderArgs(secretFile: string): string[] {
  return ['--require-header', UPSTREAM_AUTH_HEADER, '--require-header-file', secretFile];
}

/** The proxy's `upstream.auth`: the gateway reads the secret from the file when it loads the proxy. */
export function upstreamAuth(secretFile: string): { header: string; secretRef: string } {
  return { header: UPSTREAM_AUTH_HEADER, secretRef: `file:${secretFile}` };
}
