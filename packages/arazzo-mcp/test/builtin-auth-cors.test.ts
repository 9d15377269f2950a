import type { RunningServer } from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBuiltinServer } from './support/builtin-server.js';

const tempDir = useTempDir('arazzo-mcp-cors-');
let server: RunningServer;
const INSPECTOR = 'https://inspector.example.com';

beforeAll(async () => {
  // As `serve --allowed-origin` passes it: one list for /mcp and the authorization endpoints.
  server = await startBuiltinServer(
    tempDir(),
    { dataDir: tempDir(), onInitialAccount: () => {} },
    { allowedOrigins: [INSPECTOR] },
  );
});

afterAll(() => server?.close());

const DISCOVERY = [
  '/.well-known/oauth-protected-resource',
  '/.well-known/oauth-protected-resource/mcp',
  '/.well-known/oauth-authorization-server',
  '/oauth/jwks',
];

function preflight(path: string, origin: string, method = 'POST') {
  return fetch(`${server.url}${path}`, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers': 'content-type, mcp-protocol-version',
    },
  });
}

describe('Area A CORS for browser-based MCP clients', () => {
  it.each(DISCOVERY)('lets an allowed origin read %s', async (path) => {
    for (const origin of ['http://localhost:6274', INSPECTOR]) {
      const response = await fetch(`${server.url}${path}`, { headers: { origin } });
      expect(response.status).toBe(200);
      expect(response.headers.get('access-control-allow-origin')).toBe(origin);
      expect(response.headers.get('vary')).toBe('Origin');
    }
  });

  it.each(DISCOVERY)('gives a foreign origin no CORS headers on %s', async (path) => {
    const response = await fetch(`${server.url}${path}`, {
      headers: { origin: 'https://evil.example' },
    });
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
  });

  it.each(['/oauth/register', '/oauth/token'])(
    'answers a preflight to %s from an allowed origin, and refuses a foreign one',
    async (path) => {
      const allowed = await preflight(path, 'http://127.0.0.1:6274');
      expect(allowed.status).toBe(204);
      expect(allowed.headers.get('access-control-allow-origin')).toBe('http://127.0.0.1:6274');
      expect(allowed.headers.get('access-control-allow-methods')).toBe('GET, POST');
      expect(allowed.headers.get('access-control-allow-headers')).toContain('Content-Type');
      const foreign = await preflight(path, 'https://evil.example');
      expect(foreign.status).toBe(403);
      expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
    },
  );

  it('lets an allowed origin register a client and read the token endpoint errors', async () => {
    const registered = await fetch(`${server.url}/oauth/register`, {
      method: 'POST',
      headers: { origin: INSPECTOR, 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: ['http://localhost:6274/oauth/callback'] }),
    });
    expect(registered.status).toBe(200);
    expect(registered.headers.get('access-control-allow-origin')).toBe(INSPECTOR);
    const token = await fetch(`${server.url}/oauth/token`, {
      method: 'POST',
      headers: { origin: INSPECTOR },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: 'x',
        client_id: 'y',
      }),
    });
    expect(token.status).toBe(400);
    expect(token.headers.get('access-control-allow-origin')).toBe(INSPECTOR);
    expect(token.headers.get('access-control-expose-headers')).toContain('WWW-Authenticate');
  });

  it('lets an allowed origin read the 401 challenge of /mcp, and refuses a foreign one', async () => {
    const call = (origin: string) =>
      fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: {
          origin,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
      });
    const allowed = await call(INSPECTOR);
    expect(allowed.status).toBe(401);
    expect(allowed.headers.get('access-control-allow-origin')).toBe(INSPECTOR);
    expect(allowed.headers.get('access-control-expose-headers')).toContain('WWW-Authenticate');
    expect(allowed.headers.get('www-authenticate')).toContain('resource_metadata=');
    expect((await call('https://evil.example')).status).toBe(403);
  });

  it('keeps the credential endpoints same-origin: no CORS on the login API or the form', async () => {
    for (const path of ['/api/auth/login', '/oauth/authorize']) {
      const response = await fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { origin: INSPECTOR, 'content-type': 'application/json' },
        body: '{}',
      });
      expect(response.headers.get('access-control-allow-origin')).toBeNull();
    }
  });
});
