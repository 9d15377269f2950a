import { type BuiltinAuthOptions, startArazzoMcpHttp } from '@mcp-identity/arazzo-mcp';
import { createLogger, type RunningServer } from '@mcp-identity/common';
import { FIXTURE_ENV, startFixtureApi, writeFixtures } from './fixture-api.js';

/**
 * Area A (`serve --auth builtin`) on an ephemeral port, over the fixture API's user workflows,
 * with its data directory in `dataDir`. The caller closes it.
 */
export async function startBuiltinServer(
  workDir: string,
  builtinAuth: BuiltinAuthOptions & { dataDir: string },
  service: { allowedOrigins?: readonly string[] } = {},
): Promise<RunningServer> {
  const api = await startFixtureApi();
  const files = writeFixtures(workDir, api.url);
  return startArazzoMcpHttp({
    arazzo: files.users,
    sourceServers: { scim: `${api.url}/scim2` },
    env: FIXTURE_ENV,
    port: 0,
    handleSignals: false,
    logger: createLogger({ level: 'silent', pretty: false }),
    builtinAuth,
    ...service,
  });
}
