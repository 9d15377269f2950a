import { X509Certificate } from 'node:crypto';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureSelfSignedCertificate, loadTlsFiles } from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
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
