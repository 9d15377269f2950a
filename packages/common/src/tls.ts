import { KeyObject, webcrypto, X509Certificate } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import * as x509 from '@peculiar/x509';
import { randomToken } from './secrets.js';

export interface TlsMaterial {
  cert: string;
  key: string;
  certPath: string;
  keyPath: string;
  /** True when this call generated the certificate. */
  created: boolean;
}

const CERT_FILE = 'cert.pem';
const KEY_FILE = 'key.pem';
const VALID_DAYS = 397; // the longest lifetime browsers accept for a leaf certificate
const RENEW_BEFORE_MS = 24 * 60 * 60 * 1000;

/** Loads a PEM certificate and key pair from files, with a clear error when unreadable. */
export async function loadTlsFiles(certPath: string, keyPath: string): Promise<TlsMaterial> {
  const [cert, key] = await Promise.all([
    readPem(certPath, 'certificate'),
    readPem(keyPath, 'private key'),
  ]);
  return { cert, key, certPath, keyPath, created: false };
}

/** Where `ensureSelfSignedCertificate(dir)` keeps its pair, for clients that must trust it. */
export function selfSignedCertificateFiles(dir: string): { certPath: string; keyPath: string } {
  const tlsDir = join(dir, 'tls');
  return { certPath: join(tlsDir, CERT_FILE), keyPath: join(tlsDir, KEY_FILE) };
}

/**
 * Returns the self-signed certificate kept in `<dir>/tls/`, generating it the
 * first time (or when it is about to expire). SANs: localhost, 127.0.0.1, ::1.
 * Generation writes into a scratch directory renamed into place, so processes
 * starting together never see, or produce, a half-written pair.
 */
export async function ensureSelfSignedCertificate(dir: string): Promise<TlsMaterial> {
  const { certPath, keyPath } = selfSignedCertificateFiles(dir);
  const tlsDir = dirname(certPath);
  const existing = await loadTlsFiles(certPath, keyPath).catch(() => undefined);
  if (existing && !expiresSoon(existing.cert)) return existing;

  await mkdir(dir, { recursive: true, mode: 0o700 });
  const scratch = join(dir, `.tls-${randomToken(6)}`);
  await mkdir(scratch, { mode: 0o700 });
  const { cert, key } = await generateSelfSigned();
  await writeFile(join(scratch, KEY_FILE), key, { mode: 0o600 });
  await writeFile(join(scratch, CERT_FILE), cert, { mode: 0o644 });
  if (existing) await rm(tlsDir, { recursive: true, force: true });
  try {
    await rename(scratch, tlsDir);
  } catch {
    // Another process installed its pair first: use that one.
    await rm(scratch, { recursive: true, force: true });
    return loadTlsFiles(certPath, keyPath);
  }
  return { cert, key, certPath, keyPath, created: true };
}

async function generateSelfSigned(): Promise<{ cert: string; key: string }> {
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair;
  const notBefore = new Date(Date.now() - 60_000);
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: 'CN=localhost, O=mcp-identity (self-signed, local use only)',
    notBefore,
    notAfter: new Date(notBefore.getTime() + VALID_DAYS * 24 * 60 * 60 * 1000),
    keys,
    signingAlgorithm: algorithm,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([
        { type: 'dns', value: 'localhost' },
        { type: 'ip', value: '127.0.0.1' },
        { type: 'ip', value: '::1' },
      ]),
    ],
  });
  const key = KeyObject.from(keys.privateKey).export({ type: 'pkcs8', format: 'pem' }) as string;
  return { cert: certificate.toString('pem'), key };
}

function randomSerial(): string {
  // Positive 16-byte serial: clear the top bit so DER does not read it as negative.
  const bytes = webcrypto.getRandomValues(new Uint8Array(16));
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  return Buffer.from(bytes).toString('hex');
}

function expiresSoon(pem: string): boolean {
  try {
    return new Date(new X509Certificate(pem).validTo).getTime() - Date.now() < RENEW_BEFORE_MS;
  } catch {
    return true;
  }
}

async function readPem(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new Error(`Cannot read TLS ${what} at ${path} (${reason})`);
  }
}
