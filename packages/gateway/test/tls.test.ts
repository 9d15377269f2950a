import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect } from 'node:tls';
import { ensureSelfSignedCertificate } from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
import { describe, expect, it } from 'vitest';
import { proxyDefinition, startTestGateway } from './fixtures/gateway.js';
import { CLIENT_ID, startKeyManager } from './fixtures/key-manager.js';
import { postMcp } from './fixtures/mcp-client.js';
import { startUpstream } from './fixtures/upstream.js';

const tempDir = useTempDir('gw-tls-');

function peerFingerprint(url: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(
      { host: hostname, port: Number(port), rejectUnauthorized: false },
      () => {
        resolve(socket.getPeerX509Certificate()?.fingerprint256 ?? '');
        socket.end();
      },
    );
    socket.on('error', reject);
  });
}

describe('TLS', () => {
  it('serves the configured certificate and trusts a key manager through certificatePath', async () => {
    const certs = await ensureSelfSignedCertificate(tempDir());
    const upstream = await startUpstream();
    const km = await startKeyManager();
    const fx = await startTestGateway({
      dataDir: tempDir(),
      keyManager: km,
      trustKeyManagerCertificate: true,
      tls: { cert: certs.certPath, key: certs.keyPath },
    });
    try {
      const expected = new X509Certificate(readFileSync(certs.certPath)).fingerprint256;
      expect(await peerFingerprint(fx.gateway.publicUrl)).toBe(expected);

      const definition = proxyDefinition('scim-v1.0', '/scim', upstream.mcpUrl, [
        { name: 'mcp-auth', version: 'v1', params: { audiences: [CLIENT_ID] } },
      ]);
      expect((await fx.deploy(definition)).status).toBe(201);
      const token = await km.sign({});
      const response = await postMcp(
        `${fx.gateway.plainUrl}/scim/mcp`,
        { jsonrpc: '2.0', id: 1, method: 'ping' },
        { authorization: `Bearer ${token}` },
      );
      expect(response.status).toBe(200);
    } finally {
      await fx.gateway.close();
      await Promise.all([upstream.close(), km.stop()]);
    }
  });
});
