import { createPrivateKey, KeyObject, webcrypto, X509Certificate } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import * as x509 from '@peculiar/x509';
import { NotFoundError } from './errors.js';
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
const CA_CERT_FILE = 'ca.pem';
const CA_KEY_FILE = 'ca-key.pem';
const DAY_MS = 24 * 60 * 60 * 1000;
const VALID_DAYS = 397; // the longest lifetime browsers accept for a leaf certificate
const CA_VALID_DAYS = 3650;
const RENEW_BEFORE_MS = DAY_MS;
const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };

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
 * The local certificate authority's certificate of a data directory: the one
 * file clients trust (`NODE_EXTRA_CA_CERTS`, `curl --cacert`) to reach every
 * service whose certificate was issued for that directory.
 */
export function certificateAuthorityPath(dataDir: string): string {
  return join(dataDir, 'ca', CA_CERT_FILE);
}

/** Returns the data directory's local CA (`<dataDir>/ca/`), generating it the first time. */
export async function ensureCertificateAuthority(dataDir: string): Promise<TlsMaterial> {
  const certPath = certificateAuthorityPath(dataDir);
  const keyPath = join(dirname(certPath), CA_KEY_FILE);
  const existing = await loadTlsFiles(certPath, keyPath).catch(() => undefined);
  if (existing && !expiresSoon(existing.cert)) return existing;
  return installPair(dirname(certPath), { certPath, keyPath }, generateAuthority, !!existing);
}

/**
 * Returns the server certificate kept in `<dir>/tls/` (SANs localhost,
 * 127.0.0.1, ::1, and `dnsNames`: the names other hosts reach it by, a container's
 * service name say), generating it the first time or when it is about to expire.
 * With `caDir`, the certificate is issued by that directory's local CA (made
 * if missing), and a pair another authority issued is replaced, so a stack's
 * services all chain to its one CA; without, it is self-signed. Generation
 * writes into a scratch directory renamed into place, so processes starting
 * together never see, or produce, a half-written pair.
 */
export async function ensureSelfSignedCertificate(
  dir: string,
  options: { caDir?: string; dnsNames?: readonly string[] } = {},
): Promise<TlsMaterial> {
  const dnsNames = options.dnsNames ?? [];
  const files = selfSignedCertificateFiles(dir);
  const tlsDir = dirname(files.certPath);
  const existing = await loadTlsFiles(files.certPath, files.keyPath).catch(() => undefined);
  const current = existing && !expiresSoon(existing.cert) ? existing : undefined;
  if (options.caDir === undefined) {
    return current ?? installPair(tlsDir, files, () => generateSelfSigned(dnsNames), !!existing);
  }
  const ca = await ensureCertificateAuthority(options.caDir);
  if (current && issuedBy(current.cert, ca.cert)) return current;
  return installPair(tlsDir, files, () => generateLeaf(ca, dnsNames), !!existing);
}

/** Writes a generated pair next to `targetDir` and renames it into place. */
async function installPair(
  targetDir: string,
  files: { certPath: string; keyPath: string },
  generate: () => Promise<{ cert: string; key: string }>,
  replace: boolean,
): Promise<TlsMaterial> {
  const parent = dirname(targetDir);
  await mkdir(parent, { recursive: true, mode: 0o700 });
  const scratch = join(parent, `.tls-${randomToken(6)}`);
  await mkdir(scratch, { mode: 0o700 });
  const { cert, key } = await generate();
  const keyName = files.keyPath.slice(targetDir.length + 1);
  const certName = files.certPath.slice(targetDir.length + 1);
  await writeFile(join(scratch, keyName), key, { mode: 0o600 });
  await writeFile(join(scratch, certName), cert, { mode: 0o644 });
  if (replace) await rm(targetDir, { recursive: true, force: true });
  try {
    await rename(scratch, targetDir);
  } catch {
    // Another process installed its pair first: use that one.
    await rm(scratch, { recursive: true, force: true });
    return loadTlsFiles(files.certPath, files.keyPath);
  }
  return { cert, key, ...files, created: true };
}

async function generateKeys(): Promise<webcrypto.CryptoKeyPair> {
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
  return (await webcrypto.subtle.generateKey(ALGORITHM, true, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair;
}

async function generateAuthority(): Promise<{ cert: string; key: string }> {
  const keys = await generateKeys();
  const notBefore = new Date(Date.now() - 60_000);
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: `CN=mcp-identity local CA ${randomToken(6)}, O=mcp-identity (local use only)`,
    notBefore,
    notAfter: new Date(notBefore.getTime() + CA_VALID_DAYS * DAY_MS),
    keys,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert: pemWithNewline(certificate.toString('pem')), key: exportKey(keys.privateKey) };
}

async function generateSelfSigned(
  dnsNames: readonly string[],
): Promise<{ cert: string; key: string }> {
  const keys = await generateKeys();
  const notBefore = new Date(Date.now() - 60_000);
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: 'CN=localhost, O=mcp-identity (self-signed, local use only)',
    notBefore,
    notAfter: new Date(notBefore.getTime() + VALID_DAYS * DAY_MS),
    keys,
    signingAlgorithm: ALGORITHM,
    extensions: serverExtensions(dnsNames),
  });
  return { cert: pemWithNewline(certificate.toString('pem')), key: exportKey(keys.privateKey) };
}

async function generateLeaf(
  ca: TlsMaterial,
  dnsNames: readonly string[],
): Promise<{ cert: string; key: string }> {
  const keys = await generateKeys();
  const caCert = new x509.X509Certificate(ca.cert);
  const caKey = await webcrypto.subtle.importKey(
    'pkcs8',
    createPrivateKey(ca.key).export({ type: 'pkcs8', format: 'der' }),
    ALGORITHM,
    false,
    ['sign'],
  );
  const notBefore = new Date(Date.now() - 60_000);
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: 'CN=localhost, O=mcp-identity (local use only)',
    issuer: caCert.subject,
    notBefore,
    notAfter: new Date(
      Math.min(notBefore.getTime() + VALID_DAYS * DAY_MS, caCert.notAfter.getTime()),
    ),
    publicKey: keys.publicKey,
    signingKey: caKey,
    signingAlgorithm: ALGORITHM,
    extensions: [
      ...serverExtensions(dnsNames),
      await x509.AuthorityKeyIdentifierExtension.create(caCert),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert: pemWithNewline(certificate.toString('pem')), key: exportKey(keys.privateKey) };
}

/** A TLS server certificate for this machine's loopback names and `dnsNames`. */
function serverExtensions(dnsNames: readonly string[]): x509.Extension[] {
  return [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
    new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
    new x509.SubjectAlternativeNameExtension([
      { type: 'dns', value: 'localhost' },
      { type: 'ip', value: '127.0.0.1' },
      { type: 'ip', value: '::1' },
      ...dnsNames.map((value) => ({ type: 'dns' as const, value })),
    ]),
  ];
}

function exportKey(key: webcrypto.CryptoKey): string {
  return pemWithNewline(KeyObject.from(key).export({ type: 'pkcs8', format: 'pem' }) as string);
}

/** PEM files end with a newline, so concatenating them (a CA bundle) stays valid. */
function pemWithNewline(pem: string): string {
  return `${pem.replace(/\r\n/g, '\n').trimEnd()}\n`;
}

function randomSerial(): string {
  // Positive 16-byte serial: clear the top bit so DER does not read it as negative.
  const bytes = webcrypto.getRandomValues(new Uint8Array(16));
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  return Buffer.from(bytes).toString('hex');
}

function issuedBy(certPem: string, caPem: string): boolean {
  try {
    const cert = new X509Certificate(certPem);
    const ca = new X509Certificate(caPem);
    return cert.checkIssued(ca) && cert.verify(ca.publicKey);
  } catch {
    return false;
  }
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
    throw new NotFoundError(`Cannot read TLS ${what} at ${path} (${reason})`);
  }
}
