import {
  createApp,
  createCorsHook,
  createLogger,
  createOriginPolicy,
  isLoopbackOrigin,
} from '@mcp-identity/common';
import { startTestServer } from '@mcp-identity/common/testing';
import { describe, expect, it } from 'vitest';

describe('createOriginPolicy', () => {
  const policy = createOriginPolicy({
    ownOrigins: ['https://mcp.example.com/base'],
    allowedOrigins: ['https://inspector.example.com:8443'],
  });

  it('allows requests without an Origin (non-browser clients)', () => {
    expect(policy.check(undefined, 'mcp.example.com')).toBe(true);
  });

  it.each([
    'https://mcp.example.com',
    'https://inspector.example.com:8443',
    'http://localhost:6274',
    'http://127.0.0.1:3000',
    'https://[::1]:9000',
    'http://localhost',
  ])('allows %s', (origin) => {
    expect(policy.check(origin, 'localhost:7000')).toBe(true);
  });

  it.each([
    'http://evil.example',
    'https://mcp.example.com.evil.example',
    'http://mcp.example.com',
    'https://inspector.example.com',
    'http://localhost.evil.example',
    'http://127.0.0.1.nip.io',
    'null',
    'file://',
    'chrome-extension://abcdef',
    'not a url',
  ])('refuses %s', (origin) => {
    expect(policy.check(origin, 'localhost:7000')).toBe(false);
  });

  it('refuses a rebinding request whose Host names the attacker as its Origin does', () => {
    expect(policy.check('http://evil.example:7000', 'evil.example:7000')).toBe(false);
  });

  it('refuses configuration that is not an origin', () => {
    expect(() => createOriginPolicy({ ownOrigins: [], allowedOrigins: ['*'] })).toThrow(
      /allowedOrigins: "\*" is not an http\(s\) origin/,
    );
  });

  it('recognises loopback origins only on the loopback names', () => {
    expect(isLoopbackOrigin('http://127.0.0.1:1')).toBe(true);
    expect(isLoopbackOrigin('http://127.0.0.2')).toBe(false);
  });
});

async function corsServer() {
  const app = createApp({ logger: createLogger({ level: 'silent', pretty: false }) });
  app.addHook(
    'onRequest',
    createCorsHook({
      policy: createOriginPolicy({ ownOrigins: ['https://mcp.example.com'] }),
      paths: ['/.well-known/doc', '/mcp'],
    }),
  );
  // An authentication hook added after CORS: its 401 must stay readable by the browser.
  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.url === '/mcp' && request.headers.authorization === undefined) {
      await reply.code(401).header('www-authenticate', 'Bearer realm="mcp"').send({});
    }
  });
  app.get('/.well-known/doc', async () => ({ ok: true }));
  app.get('/private', async () => ({ ok: true }));
  app.post('/mcp', (_request, reply) => {
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's1' });
    reply.raw.end('{}');
  });
  return startTestServer(app);
}

describe('createCorsHook over HTTP', () => {
  it('echoes an allowed Origin with Vary and the exposed headers', async () => {
    const server = await corsServer();
    const response = await fetch(`${server.url}/.well-known/doc`, {
      headers: { origin: 'http://localhost:6274' },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBe('http://localhost:6274');
    expect(response.headers.get('vary')).toBe('Origin');
    expect(response.headers.get('access-control-expose-headers')).toBe(
      'WWW-Authenticate, Mcp-Session-Id, Mcp-Protocol-Version',
    );
  });

  it('gives a disallowed Origin no CORS headers', async () => {
    const server = await corsServer();
    const response = await fetch(`${server.url}/.well-known/doc`, {
      headers: { origin: 'http://evil.example' },
    });
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    expect(response.headers.get('vary')).toBe('Origin');
  });

  it('leaves other paths alone', async () => {
    const server = await corsServer();
    const response = await fetch(`${server.url}/private`, {
      headers: { origin: 'http://localhost:6274' },
    });
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('answers a preflight before the authentication hook, even without an OPTIONS route', async () => {
    const server = await corsServer();
    const response = await fetch(`${server.url}/mcp`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://mcp.example.com',
        'access-control-request-method': 'POST',
        'access-control-request-headers':
          'authorization, content-type, mcp-protocol-version, mcp-method, mcp-name, ' +
          'mcp-param-region, mcp-param-bad(name), x-other',
      },
    });
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe('https://mcp.example.com');
    expect(response.headers.get('access-control-allow-methods')).toBe('GET, POST, DELETE');
    // The modern era's mirrored headers, and the `Mcp-Param-*` names asked for that are tokens.
    expect(response.headers.get('access-control-allow-headers')).toBe(
      'Authorization, Content-Type, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID, ' +
        'Mcp-Method, Mcp-Name, mcp-param-region',
    );
    expect(response.headers.get('access-control-max-age')).toBe('600');
  });

  it('refuses a preflight from a disallowed Origin with 403', async () => {
    const server = await corsServer();
    const response = await fetch(`${server.url}/mcp`, {
      method: 'OPTIONS',
      headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(response.status).toBe(403);
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('keeps CORS headers on a 401 from a later hook and on a hijacked reply', async () => {
    const server = await corsServer();
    const origin = 'http://127.0.0.1:5173';
    const denied = await fetch(`${server.url}/mcp`, { method: 'POST', headers: { origin } });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('access-control-allow-origin')).toBe(origin);
    expect(denied.headers.get('access-control-expose-headers')).toContain('WWW-Authenticate');
    const served = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { origin, authorization: 'Bearer x' },
    });
    expect(served.status).toBe(200);
    expect(served.headers.get('access-control-allow-origin')).toBe(origin);
    expect(served.headers.get('mcp-session-id')).toBe('s1');
  });
});
