import { X509Certificate } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { join } from 'node:path';
import {
  certificateAuthorityPath,
  ensureSelfSignedCertificate,
  loadTlsFiles,
} from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
import { Agent, fetch } from 'undici';
import { describe, expect, it } from 'vitest';

const tempDir = useTempDir();

describe('ensureSelfSignedCertificate', () => {
  it('generates a certificate for localhost once and reuses it afterwards', async () => {
    const dir = tempDir();
    const first = await ensureSelfSignedCertificate(dir);
    expect(first.created).toBe(true);
    const cert = new X509Certificate(first.cert);
    expect(cert.subjectAltName).toBe(
      'DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1',
    );
    expect(
      cert.checkPrivateKey(await import('node:crypto').then((c) => c.createPrivateKey(first.key))),
    ).toBe(true);
    expect(statSync(first.keyPath).mode & 0o777).toBe(0o600);

    const second = await ensureSelfSignedCertificate(dir);
    expect(second.created).toBe(false);
    expect(second.cert).toBe(first.cert);
    expect(second.key).toBe(first.key);
  });

  it('hands every concurrent caller the same pair', async () => {
    const dir = tempDir();
    const results = await Promise.all([1, 2, 3].map(() => ensureSelfSignedCertificate(dir)));
    const onDisk = await loadTlsFiles(join(dir, 'tls/cert.pem'), join(dir, 'tls/key.pem'));
    for (const result of results)
      expect([result.cert, result.key]).toEqual([onDisk.cert, onDisk.key]);
  });

  it('explains which file it could not read', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'cert.pem'), 'x');
    await expect(loadTlsFiles(join(dir, 'cert.pem'), join(dir, 'nope.pem'))).rejects.toThrow(
      `Cannot read TLS private key at ${join(dir, 'nope.pem')} (ENOENT)`,
    );
  });
});

describe('the local certificate authority', () => {
  it('issues every service certificate of a data directory, and a client trusting only the CA reaches them', async () => {
    const dataDir = tempDir();
    const idp = await ensureSelfSignedCertificate(join(dataDir, 'idp'), { caDir: dataDir });
    const gateway = await ensureSelfSignedCertificate(join(dataDir, 'gateway'), {
      caDir: dataDir,
    });
    const caPath = certificateAuthorityPath(dataDir);
    expect(caPath).toBe(join(dataDir, 'ca/ca.pem'));
    const caPem = readFileSync(caPath, 'utf8');
    expect(statSync(join(dataDir, 'ca/ca-key.pem')).mode & 0o777).toBe(0o600);
    for (const pem of [caPem, idp.cert, idp.key, gateway.cert, gateway.key]) {
      expect(pem.endsWith('-----\n')).toBe(true);
    }
    const ca = new X509Certificate(caPem);
    expect(ca.ca).toBe(true);
    for (const leaf of [idp, gateway]) {
      const cert = new X509Certificate(leaf.cert);
      expect(cert.checkIssued(ca) && cert.verify(ca.publicKey)).toBe(true);
      expect(cert.ca).toBe(false);
    }
    expect(new X509Certificate(idp.cert).serialNumber).not.toBe(
      new X509Certificate(gateway.cert).serialNumber,
    );

    const servers = await Promise.all(
      [idp, gateway].map(async (pair, index) => {
        const server = createHttpsServer({ cert: pair.cert, key: pair.key }, (_req, res) =>
          res.end(`service ${index}`),
        );
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
        return server;
      }),
    );
    try {
      const agent = new Agent({ connect: { ca: caPem } });
      for (const [index, server] of servers.entries()) {
        const { port } = server.address() as { port: number };
        for (const host of ['localhost', '127.0.0.1']) {
          const response = await fetch(`https://${host}:${port}/`, { dispatcher: agent });
          expect(await response.text()).toBe(`service ${index}`);
        }
      }
      await agent.close();
    } finally {
      for (const server of servers) server.close();
    }
  });

  it('replaces a pair another authority issued when a CA directory is given', async () => {
    const dataDir = tempDir();
    const standalone = await ensureSelfSignedCertificate(join(dataDir, 'idp'));
    expect(standalone.cert.endsWith('-----END CERTIFICATE-----\n')).toBe(true);
    const selfSigned = new X509Certificate(standalone.cert);
    expect(selfSigned.issuer).toBe(selfSigned.subject);
    expect(selfSigned.verify(selfSigned.publicKey)).toBe(true);
    const reissued = await ensureSelfSignedCertificate(join(dataDir, 'idp'), { caDir: dataDir });
    expect(reissued.created).toBe(true);
    expect(reissued.cert).not.toBe(standalone.cert);
    const ca = new X509Certificate(readFileSync(certificateAuthorityPath(dataDir)));
    expect(new X509Certificate(reissued.cert).checkIssued(ca)).toBe(true);
    // Without a CA directory, the service keeps whatever valid pair it finds.
    const again = await ensureSelfSignedCertificate(join(dataDir, 'idp'));
    expect(again.cert).toBe(reissued.cert);
  });
});
