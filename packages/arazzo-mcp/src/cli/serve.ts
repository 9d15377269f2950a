import { batchedStdout, createLogger, logFormatSetting, startTracing } from '@mcp-identity/common';
import { describeInitialAccount } from '../auth/builtin-auth.js';
import { serveArazzoMcpStdio, startArazzoMcpHttp } from '../service.js';
import type { ServeOptions } from './command-line.js';
import type { CliIo } from './io.js';

/** `serve`: resolves once the server is up (HTTP) or once stdin closes (stdio). */
export async function serve(options: ServeOptions, io: CliIo): Promise<number> {
  const stdio = options.transport === 'stdio';
  const logger = createLogger({
    name: 'arazzo-mcp',
    level: options.logLevel,
    destination: stdio ? process.stderr : batchedStdout(),
    // With stdio, stdout is the protocol: pino-pretty writes there, so JSON lines on stderr.
    ...(stdio ? { pretty: false } : logFormatSetting(options.logFormat)),
  });
  const settings = { ...options, env: io.env, logger };
  // The SCIM MCP server of the stack, or Area A when it signs its users in itself. From the
  // process's environment, which the OpenTelemetry SDK reads too.
  await startTracing(options.auth === 'builtin' ? 'mcp-identity-area-a' : 'mcp-identity-scim-mcp');
  if (stdio) {
    await serveArazzoMcpStdio(settings);
    return 0;
  }
  const builtinAuth =
    options.auth === 'builtin'
      ? {
          dataDir: options.dataDir,
          databaseUrl: options.databaseUrl,
          publicUrl: options.publicUrl,
          trustProxy: options.trustProxy,
          initialAccountEmail: options.adminEmail,
          stateUrl: options.stateUrl,
          refreshTokenRaceWindowSeconds: options.refreshRaceWindow,
          clientIdMetadata: {
            allowPrivateAddresses: options.clientMetadataAllowPrivateAddresses,
          },
          onInitialAccount: (account: { email: string; password: string }) =>
            io.out(describeInitialAccount(account)),
        }
      : undefined;
  const running = await startArazzoMcpHttp({ ...settings, builtinAuth });
  logger.info({ url: `${running.url}/mcp` }, 'arazzo-mcp listening');
  return 0;
}
