import { describe, expect, it } from 'vitest';
import { rawGet } from './fixtures/flow.js';
import { hostForSuite } from './fixtures/host.js';

function asMetadata(issuer: string) {
  return {
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    registration_endpoint: `${issuer}/oauth/register`,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_methods_supported: ['none'],
    code_challenge_methods_supported: ['S256'],
  };
}

describe('discovery documents', () => {
  const host = hostForSuite();

  it('serves the protected resource metadata with the spec values', async () => {
    const response = await fetch(`${host.url}/.well-known/oauth-protected-resource`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('application/json');
    expect(await response.json()).toEqual({
      resource: `${host.url}/mcp`,
      authorization_servers: [host.url],
      scopes_supported: ['mcp:tools'],
    });
  });

  it('serves the same document at the path-specific /mcp location', async () => {
    const root = await (await fetch(`${host.url}/.well-known/oauth-protected-resource`)).json();
    const response = await fetch(`${host.url}/.well-known/oauth-protected-resource/mcp`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual(root);
  });

  it('serves the authorization server metadata with the exact spec values', async () => {
    const response = await fetch(`${host.url}/.well-known/oauth-authorization-server`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject(asMetadata(host.url));
    for (const [field, value] of Object.entries(asMetadata(host.url))) {
      expect(body[field]).toEqual(value);
    }
    expect(body.jwks_uri).toBe(`${host.url}/oauth/jwks`);
  });

  it('publishes the signing key at jwks_uri', async () => {
    const response = await fetch(`${host.url}/oauth/jwks`);
    const jwks = (await response.json()) as { keys: Array<Record<string, unknown>> };
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]).toMatchObject({
      kty: 'EC',
      crv: 'P-256',
      alg: 'ES256',
      kid: host.key.kid,
    });
    expect(jwks.keys[0]).not.toHaveProperty('d');
  });

  it('derives the issuer from the Host header of the request', async () => {
    const response = await rawGet(`${host.url}/.well-known/oauth-authorization-server`, {
      host: 'mcp.example.test:7000',
    });
    expect((JSON.parse(response.body) as { issuer: string }).issuer).toBe(
      'http://mcp.example.test:7000',
    );
  });

  it('ignores X-Forwarded-* headers when trustProxy is off', async () => {
    const response = await fetch(`${host.url}/.well-known/oauth-protected-resource`, {
      headers: {
        'x-forwarded-proto': 'https',
        'x-forwarded-host': 'evil.example',
        'x-forwarded-prefix': '/evil',
      },
    });
    expect(((await response.json()) as { resource: string }).resource).toBe(`${host.url}/mcp`);
  });

  it('answers 400 to a malformed Host header instead of building an issuer from it', async () => {
    const response = await rawGet(`${host.url}/.well-known/oauth-protected-resource`, {
      host: 'bad_host"',
    });
    expect(response.status).toBe(400);
  });
});

describe('issuer with a path base', () => {
  const host = hostForSuite({ prefix: '/tenant/a' });

  it('includes the path base in every URL of both documents', async () => {
    const issuer = `${host.url}/tenant/a`;
    const as = await (await fetch(`${issuer}/.well-known/oauth-authorization-server`)).json();
    expect(as).toMatchObject(asMetadata(issuer));
    const prm = await (await fetch(`${issuer}/.well-known/oauth-protected-resource`)).json();
    expect(prm).toEqual({
      resource: `${issuer}/mcp`,
      authorization_servers: [issuer],
      scopes_supported: ['mcp:tools'],
    });
  });

  it('guards /mcp under the path base with a challenge naming the prefixed metadata', async () => {
    const response = await fetch(`${host.url}/tenant/a/mcp`, { method: 'POST' });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(
      `Bearer realm="mcp", resource_metadata="${host.url}/tenant/a/.well-known/oauth-protected-resource"`,
    );
  });
});

describe('issuer behind a proxy', () => {
  const host = hostForSuite({ trustProxy: true });

  it('honours X-Forwarded-Proto, -Host and -Prefix when trustProxy is set', async () => {
    const response = await fetch(`${host.url}/.well-known/oauth-authorization-server`, {
      headers: {
        'x-forwarded-proto': 'https',
        'x-forwarded-host': 'mcp.example.com',
        'x-forwarded-prefix': '/area-a/',
      },
    });
    expect(((await response.json()) as { issuer: string }).issuer).toBe(
      'https://mcp.example.com/area-a',
    );
  });
});

describe('issuer from publicUrl', () => {
  const host = hostForSuite({ publicUrl: 'https://public.example.com/base/', trustProxy: true });

  it('uses publicUrl without its trailing slash, whatever the request says', async () => {
    const response = await rawGet(`${host.url}/.well-known/oauth-authorization-server`, {
      'x-forwarded-host': 'other.example',
      host: 'another.example',
    });
    expect(JSON.parse(response.body)).toMatchObject(asMetadata('https://public.example.com/base'));
  });
});
