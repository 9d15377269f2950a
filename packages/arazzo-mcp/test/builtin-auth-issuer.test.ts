import { startArazzoMcpHttp } from '@mcp-identity/arazzo-mcp';
import { createLogger, type RunningServer } from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
import { decodeJwt } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { FIXTURE_ENV, startFixtureApi, writeFixtures } from './support/fixture-api.js';

const tempDir = useTempDir('arazzo-mcp-issuer-');
const logger = createLogger({ level: 'silent', pretty: false });
const servers: RunningServer[] = [];

afterAll(async () => {
  for (const server of servers) await server.close();
});

/** A builtin-auth server plus its first account's credentials. */
async function serve(options: { publicUrl?: string; trustProxy?: boolean }) {
  const api = await startFixtureApi();
  const files = writeFixtures(tempDir(), api.url);
  let admin = { email: '', password: '' };
  const server = await startArazzoMcpHttp({
    arazzo: files.users,
    env: FIXTURE_ENV,
    port: 0,
    handleSignals: false,
    logger,
    builtinAuth: {
      dataDir: tempDir(),
      ...options,
      onInitialAccount: (account) => {
        admin = account;
      },
    },
  });
  servers.push(server);
  return { server, admin };
}

function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

describe('serve --auth builtin: one issuer for the guard, the plugin and the login', () => {
  it('uses --public-url everywhere, whatever the Host header says', async () => {
    const { server, admin } = await serve({ publicUrl: 'https://mcp.example.com/area-a/' });
    const issuer = 'https://mcp.example.com/area-a';
    const challenge = await post(`${server.url}/mcp`, {});
    expect(challenge.headers.get('www-authenticate')).toBe(
      `Bearer realm="mcp", resource_metadata="${issuer}/.well-known/oauth-protected-resource"`,
    );
    const prm = await (await fetch(`${server.url}/.well-known/oauth-protected-resource`)).json();
    expect(prm).toMatchObject({ resource: `${issuer}/mcp`, authorization_servers: [issuer] });
    const login = await post(`${server.url}/api/auth/login`, admin);
    const { access_token: token } = (await login.json()) as { access_token: string };
    expect(decodeJwt(token)).toMatchObject({ iss: issuer, aud: `${issuer}/mcp` });
    const refused = await post(`${server.url}/mcp`, {}, { authorization: `Bearer ${token}` });
    expect(refused.status).toBe(403);
  });

  it('believes X-Forwarded-* only with --trust-proxy, for the issuer and the client IP', async () => {
    const forwarded = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'mcp.example.org' };
    const trusting = await serve({ trustProxy: true });
    const behindProxy = await post(`${trusting.server.url}/mcp`, {}, forwarded);
    expect(behindProxy.headers.get('www-authenticate')).toBe(
      'Bearer realm="mcp", resource_metadata="https://mcp.example.org/.well-known/oauth-protected-resource"',
    );
    const login = await post(`${trusting.server.url}/api/auth/login`, trusting.admin, forwarded);
    const { access_token: token } = (await login.json()) as { access_token: string };
    expect(decodeJwt(token).iss).toBe('https://mcp.example.org');
    // Failed logins are counted per forwarded client IP: one client's failures do not lock out another.
    for (let attempt = 0; attempt < 20; attempt += 1) {
      const response = await post(
        `${trusting.server.url}/api/auth/login`,
        { email: `u${attempt}@example.com`, password: 'wrong password' },
        {
          'x-forwarded-for': '198.51.100.7',
        },
      );
      expect(response.status).toBe(401);
    }
    const blocked = await post(`${trusting.server.url}/api/auth/login`, trusting.admin, {
      'x-forwarded-for': '198.51.100.7',
    });
    expect(blocked.status).toBe(429);
    const other = await post(`${trusting.server.url}/api/auth/login`, trusting.admin, {
      'x-forwarded-for': '198.51.100.8',
    });
    expect(other.status).toBe(200);

    const direct = await serve({});
    const ignored = await post(`${direct.server.url}/mcp`, {}, forwarded);
    expect(ignored.headers.get('www-authenticate')).toBe(
      `Bearer realm="mcp", resource_metadata="${direct.server.url}/.well-known/oauth-protected-resource"`,
    );
  });
});
