import { request as httpRequest } from 'node:http';
import { parseCommandLine, startArazzoMcpHttp } from '@mcp-identity/arazzo-mcp';
import { ConfigError, createLogger, type RunningServer } from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FIXTURE_ENV,
  fixtureServeOptions,
  startFixtureApi,
  writeFixtures,
} from './support/fixture-api.js';
import { type ServedBin, spawnServe } from './support/serve-bin.js';

const INSPECTOR = 'https://inspector.example.com';
const tempDir = useTempDir('arazzo-mcp-origin-');
const logger = createLogger({ level: 'silent', pretty: false });
let served: ServedBin;
let areaA: RunningServer;

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'browser-page', version: '1' },
  },
});

/** A raw POST (fetch may not set Host), as the conformance suite's dns-rebinding check sends. */
function post(
  url: string,
  headers: Record<string, string>,
  method = 'POST',
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${url}/mcp`,
      {
        method,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...headers,
        },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(method === 'POST' ? INITIALIZE : undefined);
  });
}

const FORBIDDEN = {
  jsonrpc: '2.0',
  id: null,
  error: { code: -32600, message: 'Forbidden: Origin not allowed' },
};

beforeAll(async () => {
  const api = await startFixtureApi();
  const files = writeFixtures(tempDir(), api.url);
  served = await spawnServe(
    [
      '--arazzo',
      files.users,
      '--source-server',
      `scim=${api.url}/scim2`,
      '--port',
      '0',
      '--allowed-origin',
      INSPECTOR,
    ],
    FIXTURE_ENV,
  );
  areaA = await startArazzoMcpHttp({
    ...fixtureServeOptions(files.users, api),
    logger,
    builtinAuth: { dataDir: tempDir(), onInitialAccount: () => {} },
  });
}, 60_000);

afterAll(async () => {
  await served?.stop();
  await areaA?.close();
});

describe('Origin validation on /mcp (DNS rebinding protection)', () => {
  it('refuses the conformance suite dns-rebinding request with 403 and a JSON-RPC error', async () => {
    const response = await post(served.url, {
      host: 'evil.example.com',
      origin: 'http://evil.example.com',
    });
    expect(response.status).toBe(403);
    expect(JSON.parse(response.body)).toEqual(FORBIDDEN);
  });

  it('refuses foreign, null and malformed origins, whatever the Host says', async () => {
    const host = new URL(served.url).host;
    for (const origin of ['http://evil.example.com', 'null', 'http://localhost.evil.com', '*']) {
      expect({ origin, status: (await post(served.url, { host, origin })).status }).toEqual({
        origin,
        status: 403,
      });
    }
  });

  it('serves clients without an Origin, loopback pages and --allowed-origin', async () => {
    const cases: Record<string, string>[] = [
      {},
      { origin: 'http://localhost:6274' },
      { origin: 'http://127.0.0.1:3000' },
      { origin: INSPECTOR },
    ];
    for (const headers of cases) {
      const response = await post(served.url, headers);
      expect({ headers, status: response.status }).toEqual({ headers, status: 200 });
      expect(JSON.parse(response.body)).toMatchObject({
        result: { protocolVersion: '2025-06-18' },
      });
    }
  });

  it('answers CORS for allowed origins only, preflight included', async () => {
    const allowed = await post(served.url, { origin: INSPECTOR });
    expect(allowed.headers['access-control-allow-origin']).toBe(INSPECTOR);
    expect(allowed.headers['access-control-expose-headers']).toContain('Mcp-Protocol-Version');
    expect(allowed.headers.vary).toContain('Origin');
    const preflight = await post(
      served.url,
      { origin: INSPECTOR, 'access-control-request-method': 'POST' },
      'OPTIONS',
    );
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-headers']).toContain('Mcp-Protocol-Version');
    const refused = await post(
      served.url,
      { origin: 'http://evil.example.com', 'access-control-request-method': 'POST' },
      'OPTIONS',
    );
    expect(refused.status).toBe(403);
    expect(refused.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('refuses a foreign origin on Area A before authentication, so no challenge leaks', async () => {
    const foreign = await post(areaA.url, { origin: 'http://evil.example.com' });
    expect(foreign.status).toBe(403);
    expect(JSON.parse(foreign.body)).toEqual(FORBIDDEN);
    expect(foreign.headers['www-authenticate']).toBeUndefined();
    const local = await post(areaA.url, { origin: 'http://localhost:6274' });
    expect(local.status).toBe(401);
  });

  it('refuses an --allowed-origin that is not an http(s) origin (exit 2)', () => {
    for (const value of ['inspector.example.com', 'ftp://x.example', 'https://u:p@x.example']) {
      expect(() =>
        parseCommandLine(['serve', '--arazzo', 'w.yaml', '--allowed-origin', value], {}),
      ).toThrow(ConfigError);
    }
    expect(
      parseCommandLine(['serve', '--arazzo', 'w.yaml'], {
        ARAZZO_MCP_ALLOWED_ORIGINS: `${INSPECTOR},http://app.example:8080`,
      }),
    ).toMatchObject({ options: { allowedOrigins: [INSPECTOR, 'http://app.example:8080'] } });
  });
});
