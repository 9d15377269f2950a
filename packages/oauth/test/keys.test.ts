import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useTempDir } from '@mcp-identity/common/testing';
import {
  createAccessTokenIssuer,
  generateSigningKey,
  loadOrCreateSigningKey,
  publicJwks,
} from '@mcp-identity/oauth';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';

const tempDir = useTempDir('oauth-keys-');

describe('signing keys', () => {
  it('creates a key file readable only by its owner, and loads the same key again', async () => {
    const file = join(tempDir(), 'keys', 'signing-key.json');
    const created = await loadOrCreateSigningKey(file);
    expect(created.created).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const loaded = await loadOrCreateSigningKey(file);
    expect(loaded.created).toBe(false);
    expect(loaded.kid).toBe(created.kid);
    expect(loaded.publicJwk).toEqual(created.publicJwk);
    expect(JSON.parse(readFileSync(file, 'utf8')).alg).toBe('ES256');
  });

  it('refuses a file that is not a key file', async () => {
    const file = join(tempDir(), 'broken.json');
    writeFileSync(file, JSON.stringify({ hello: 'world' }));
    await expect(loadOrCreateSigningKey(file)).rejects.toThrow(/not a signing key file/);
  });

  it('publishes only public key material in the JWKS', async () => {
    const key = await generateSigningKey('RS256');
    const jwks = publicJwks(key);
    expect(jwks.keys[0]).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig', kid: key.kid });
    for (const secret of ['d', 'p', 'q', 'dp', 'dq', 'qi'])
      expect(jwks.keys[0]).not.toHaveProperty(secret);
  });

  it('issues access tokens verifiable against the published JWKS', async () => {
    const key = await generateSigningKey('RS256');
    const issue = createAccessTokenIssuer(key, { ttlSeconds: 120 });
    const { token, expiresIn } = await issue({
      userId: 'u1',
      clientId: 'c1',
      scope: 'mcp:tools',
      audience: 'https://mcp.example/mcp',
      issuer: 'https://mcp.example',
    });
    expect(expiresIn).toBe(120);
    const { payload, protectedHeader } = await jwtVerify(
      token,
      createLocalJWKSet(publicJwks(key)),
      {
        algorithms: ['RS256'],
        issuer: 'https://mcp.example',
        audience: 'https://mcp.example/mcp',
      },
    );
    expect(protectedHeader).toMatchObject({ typ: 'at+jwt', kid: key.kid });
    expect(payload).toMatchObject({ sub: 'u1', client_id: 'c1', scope: 'mcp:tools' });
  });
});
