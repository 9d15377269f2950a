import { generateSigningKey, signToken } from '@mcp-identity/oauth';
import { SignJWT, UnsecuredJWT } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { listTools, obtainTokens } from './fixtures/flow.js';
import { ALICE, hostForSuite } from './fixtures/host.js';

describe('the /mcp guard', () => {
  const host = hostForSuite();
  let challenge: string;
  beforeAll(async () => {
    challenge = `Bearer realm="mcp", resource_metadata="${host.url}/.well-known/oauth-protected-resource"`;
  });

  const tokenFor = (overrides: { issuer?: string; audience?: string; scope?: string } = {}) =>
    signToken(host.key, {
      issuer: overrides.issuer ?? host.url,
      audience: overrides.audience ?? `${host.url}/mcp`,
      subject: ALICE.id,
      ttlSeconds: 300,
      claims: { scope: overrides.scope ?? 'mcp:tools' },
      clock: host.clock.read,
    });

  it('answers 401 with the exact challenge when no token is sent', async () => {
    const response = await listTools(host.url);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(challenge);
  });

  it('answers 401 with the exact challenge to a malformed Authorization header', async () => {
    for (const header of [
      'Bearer',
      'Basic dXNlcjpwYXNz',
      'Bearer not a token',
      'Bearer abc.def.ghi',
    ]) {
      const response = await listTools(host.url, header);
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe(challenge);
    }
  });

  it('lets a token from the code flow through to the MCP server', async () => {
    const tokens = await obtainTokens(host);
    const response = await listTools(host.url, `Bearer ${tokens.access_token}`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { result: { tools: Array<{ name: string }> } };
    expect(body.result.tools.map((tool) => tool.name)).toEqual(['whoami']);
  });

  it('answers 401 to an expired token', async () => {
    const { token } = await tokenFor();
    host.clock.advance(301_000);
    const response = await listTools(host.url, `Bearer ${token}`);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(challenge);
  });

  it('answers 401 to a token signed by another key', async () => {
    const foreignKey = await generateSigningKey('ES256');
    const { token } = await signToken(foreignKey, {
      issuer: host.url,
      audience: `${host.url}/mcp`,
      subject: ALICE.id,
      ttlSeconds: 300,
      claims: { scope: 'mcp:tools' },
      clock: host.clock.read,
    });
    expect((await listTools(host.url, `Bearer ${token}`)).status).toBe(401);
  });

  it('answers 401 to a token for another audience', async () => {
    const { token } = await tokenFor({ audience: 'https://other.example/mcp' });
    expect((await listTools(host.url, `Bearer ${token}`)).status).toBe(401);
  });

  it('answers 401 to a token from another issuer', async () => {
    const { token } = await tokenFor({ issuer: 'https://other.example' });
    expect((await listTools(host.url, `Bearer ${token}`)).status).toBe(401);
  });

  it('answers 401 to an unsigned (alg none) token', async () => {
    const token = new UnsecuredJWT({ scope: 'mcp:tools' })
      .setIssuer(host.url)
      .setAudience(`${host.url}/mcp`)
      .setSubject(ALICE.id)
      .setExpirationTime(Math.floor(host.clock.now / 1000) + 300)
      .encode();
    expect((await listTools(host.url, `Bearer ${token}`)).status).toBe(401);
  });

  it('answers 401 to an HS256 token keyed with the public key (algorithm pinning)', async () => {
    const secret = new TextEncoder().encode(JSON.stringify(host.key.publicJwk));
    const token = await new SignJWT({ scope: 'mcp:tools' })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer(host.url)
      .setAudience(`${host.url}/mcp`)
      .setSubject(ALICE.id)
      .setExpirationTime(Math.floor(host.clock.now / 1000) + 300)
      .sign(secret);
    expect((await listTools(host.url, `Bearer ${token}`)).status).toBe(401);
  });

  it('answers 403 insufficient_scope to a valid token without mcp:tools (a normal login)', async () => {
    const { token } = await tokenFor({ scope: 'openid profile' });
    const response = await listTools(host.url, `Bearer ${token}`);
    expect(response.status).toBe(403);
    expect(response.headers.get('www-authenticate')).toBe(
      `Bearer error="insufficient_scope", scope="mcp:tools", resource_metadata="${host.url}/.well-known/oauth-protected-resource"`,
    );
  });

  it('guards every path under /mcp', async () => {
    const response = await fetch(`${host.url}/mcp/anything`);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(challenge);
  });

  it('guards /mcp however its path is percent-encoded', async () => {
    for (const path of ['/%6Dcp', '/mc%70', '/./mcp']) {
      const response = await listTools(host.url, undefined, path);
      expect(response.status).toBe(401);
    }
  });

  it('does not accept a token in the query string', async () => {
    const tokens = await obtainTokens(host);
    const response = await listTools(
      host.url,
      undefined,
      `/mcp?access_token=${tokens.access_token}`,
    );
    expect(response.status).toBe(401);
  });

  it('leaves other paths with their default behaviour', async () => {
    const response = await fetch(`${host.url}/mcpx`);
    expect(response.status).toBe(404);
    expect(response.headers.get('www-authenticate')).toBeNull();
  });
});
