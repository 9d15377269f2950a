/** The base URL an operation is called at: a `sourceServers` override, else the OpenAPI server. */
import type { Operation } from './openapi.js';
import { envPrefix, sanitizeEnvName } from './security.js';

/**
 * `servers[0]` of the operation (operation, path item, then document level) with its
 * variables filled from `<PREFIX>_RUNNER_SERVER_<VAR>` or their defaults; a relative URL is
 * resolved against the location of the OpenAPI document.
 */
export function serverBase(
  operation: Operation,
  sourceServers: Record<string, string>,
  env: Record<string, string | undefined>,
): string {
  const source = operation.source;
  const override = sourceServers[source.name];
  if (override) return override;
  const server = operation.servers[0] as
    | { url?: unknown; variables?: Record<string, { default?: unknown }> }
    | undefined;
  const template = String(server?.url ?? '');
  const prefix = envPrefix(source.title);
  const url = template.replace(/\{([^}]+)\}/g, (whole, name: string) => {
    const fromEnv = env[`${prefix ? `${prefix}_` : ''}RUNNER_SERVER_${sanitizeEnvName(name)}`];
    const fallback = server?.variables?.[name]?.default;
    return fromEnv ?? (fallback === undefined ? whole : String(fallback));
  });
  return /^[a-z][a-z0-9+.-]*:/i.test(url) ? url : new URL(url, source.location).href;
}
