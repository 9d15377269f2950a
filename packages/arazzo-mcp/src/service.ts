import { createRunner, type LoadedArazzo, loadArazzo } from '@mcp-identity/arazzo';
import {
  batchedStdout,
  createLogger,
  type Logger,
  type RunningServer,
  startServer,
} from '@mcp-identity/common';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import {
  type BuiltinAuth,
  type BuiltinAuthOptions,
  setUpBuiltinAuth,
} from './auth/builtin-auth.js';
import { createArazzoMcpApp } from './http/app.js';
import { type DelegatedAuthOptions, delegatedAuthGuard } from './http/delegated-auth.js';
import type { RequiredHeader } from './http/required-header.js';
import { mcpServerFactory, type ServerInfo } from './mcp/server.js';
import { createArazzoMcpMetrics, metricsTokenFromEnv } from './metrics.js';
import { createToolCatalog, type ToolCatalog, type ToolCatalogOptions } from './tools/catalog.js';

export interface ArazzoMcpOptions extends Omit<ToolCatalogOptions, 'logger'> {
  /** Path or http(s) URL of the Arazzo document. */
  arazzo: string;
  /** Source description name → server URL replacing the OpenAPI `servers[0]`. */
  sourceServers?: Record<string, string>;
  /** Credentials and ARAZZO_DISABLE_TLS_VERIFY are read from here (default process.env). */
  env?: Record<string, string | undefined>;
  /** Keep client-credentials tokens until 30 s before expiry (default: one per tool call). */
  tokenCache?: boolean;
  /** Per HTTP request made by a workflow (default 30 000). */
  requestTimeoutMs?: number;
  /** Largest API response a workflow accepts (default 10 MiB). */
  maxResponseBytes?: number;
  logger?: Logger;
  serverInfo?: ServerInfo;
}

export interface OpenedArazzoMcp {
  readonly loaded: LoadedArazzo;
  readonly catalog: ToolCatalog;
  /** Releases the executor's connection pools. */
  close(): Promise<void>;
}

/** `ARAZZO_DISABLE_TLS_VERIFY` disables verification only when it is exactly `1` (trimmed). */
export function tlsVerifyFromEnv(env: Record<string, string | undefined>): boolean {
  return env.ARAZZO_DISABLE_TLS_VERIFY?.trim() !== '1';
}

/**
 * Loads and validates the Arazzo document and builds its tools. Rejects with the executor's
 * ArazzoValidationError (every problem of the files) or a ToolShapeError (tool names).
 */
export async function openArazzoMcp(options: ArazzoMcpOptions): Promise<OpenedArazzoMcp> {
  const env = options.env ?? process.env;
  const loaded = await loadArazzo(options.arazzo, {
    sourceServers: options.sourceServers,
    tlsVerify: tlsVerifyFromEnv(env),
  });
  warnAboutMissingCredentials(loaded, env, options.logger);
  const runner = createRunner(loaded, {
    env,
    tokenCache: options.tokenCache,
    timeoutMs: options.requestTimeoutMs,
    maxResponseBytes: options.maxResponseBytes,
    logger: options.logger,
  });
  try {
    const catalog = createToolCatalog(loaded.workflows, runner, {
      honorRequired: options.honorRequired,
      paramDescriptions: options.paramDescriptions,
      resultFormat: options.resultFormat,
      httpErrorsAsToolErrors: options.httpErrorsAsToolErrors,
      delegation: options.delegation,
      logger: options.logger,
    });
    return { loaded, catalog, close: () => runner.close() };
  } catch (error) {
    await runner.close();
    throw error;
  }
}

/** Names only: values are secrets. */
function warnAboutMissingCredentials(
  loaded: LoadedArazzo,
  env: Record<string, string | undefined>,
  logger: Logger | undefined,
): void {
  for (const { source, scheme, env: names } of loaded.credentials) {
    if (names.every((name) => !env[name]?.trim())) {
      logger?.warn(
        { source, scheme, env: names },
        'no credentials set for a security scheme: its requests will be sent unauthenticated',
      );
    }
  }
}

export interface ArazzoMcpHttpOptions extends ArazzoMcpOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 5000; 0 picks a free port. */
  port?: number;
  /** Close gracefully on SIGINT/SIGTERM (default true). */
  handleSignals?: boolean;
  /**
   * `--auth builtin`: the server is its own OAuth 2.1 authorization server and `/mcp` needs a
   * token with `mcp:tools`. Absent: `--auth none` (a gateway in front authenticates).
   */
  builtinAuth?: BuiltinAuthOptions;
  /** `--require-header`: every `/mcp` request must carry this header value (401 otherwise). */
  requiredHeader?: RequiredHeader;
  /** Browser origins allowed on `/mcp` besides loopback and the public URL's (403 otherwise). */
  allowedOrigins?: readonly string[];
  /**
   * Delegated calls (off by default): every `/mcp` request needs a bearer token the identity
   * provider issued for this server, and each tool call exchanges it for the API's tokens.
   */
  delegatedAuth?: DelegatedAuthOptions;
}

/** Area A's port in the `mcp-identity` stack (the command's own default stays 5000). */
export const AREA_A_PORT = 7000;

/** Serves the tools over stateless Streamable HTTP at `<url>/mcp`. */
export async function startArazzoMcpHttp(options: ArazzoMcpHttpOptions): Promise<RunningServer> {
  const logger =
    options.logger ?? createLogger({ name: 'arazzo-mcp', destination: batchedStdout() });
  const { delegatedAuth } = options;
  const opened = await openArazzoMcp({
    ...options,
    logger,
    ...(delegatedAuth && { delegation: { resource: delegatedAuth.resource } }),
  });
  let auth: BuiltinAuth | undefined;
  try {
    if (options.builtinAuth) {
      // The same browser origins get CORS on the authorization endpoints as on /mcp.
      auth = await setUpBuiltinAuth({
        allowedOrigins: options.allowedOrigins,
        ...options.builtinAuth,
      });
    }
    const metrics = createArazzoMcpMetrics({
      token: metricsTokenFromEnv(options.env ?? process.env),
      builtinAuth: auth !== undefined,
    });
    const app = createArazzoMcpApp({
      catalog: metrics.instrument(opened.catalog),
      logger,
      serverInfo: options.serverInfo,
      auth,
      requiredHeader: options.requiredHeader,
      mcpGuard: delegatedAuth && delegatedAuthGuard(delegatedAuth),
      allowedOrigins: options.allowedOrigins,
      ownOrigins: options.builtinAuth?.publicUrl ? [options.builtinAuth.publicUrl] : [],
      recordRequest: metrics.recordRequest,
    });
    metrics.register(app);
    // Runs once in-flight requests have finished, whether closed by the caller or a signal.
    app.addHook('onClose', async () => {
      await auth?.close();
      await opened.close();
    });
    return await startServer(app, {
      host: options.host ?? '127.0.0.1',
      port: options.port ?? 5000,
      handleSignals: options.handleSignals,
    });
  } catch (error) {
    await auth?.close();
    await opened.close();
    throw error;
  }
}

/**
 * Serves the tools over stdio until the input closes, in either protocol era. Logs must not touch stdout (it carries
 * the protocol), so the default logger writes JSON lines to stderr.
 */
export async function serveArazzoMcpStdio(options: ArazzoMcpOptions): Promise<void> {
  const logger =
    options.logger ??
    createLogger({ name: 'arazzo-mcp', pretty: false, destination: process.stderr });
  const opened = await openArazzoMcp({ ...options, logger });
  // The SDK's dual-era stdio entry: a connection that opens with `server/discover` (or a
  // modern request) is served in the 2026-07-28 era, one that opens with `initialize` in the
  // legacy era it negotiates.
  const handle = serveStdio(mcpServerFactory(opened.catalog, options.serverInfo), {
    onerror: (error) => logger.debug({ err: error }, 'MCP stdio exchange refused or failed'),
  });
  await new Promise<void>((resolve) => process.stdin.once('end', resolve));
  await handle.close();
  await opened.close();
}
