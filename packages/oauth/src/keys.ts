import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { InvalidArgumentError } from '@mcp-identity/common';
import type { CryptoKey, JWK } from 'jose';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, SignJWT } from 'jose';
import type { Clock } from './clock.js';
import { systemClock } from './clock.js';
import type { IssueAccessTokenHook } from './options.js';

export type SigningAlgorithm = 'ES256' | 'RS256';

/** An asymmetric key pair for signing access tokens; `publicJwk` carries `kid`, `alg`, `use`. */
export interface SigningKey {
  alg: SigningAlgorithm;
  kid: string;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  publicJwk: JWK;
}

/** The signing key of a private JWK, for a host that keeps its key itself (a shared database). */
export async function importSigningKey(
  alg: SigningAlgorithm,
  privateJwk: JWK,
): Promise<SigningKey> {
  const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...publicPart } = privateJwk;
  const kid = await calculateJwkThumbprint(publicPart);
  const privateKey = (await importJWK(privateJwk, alg)) as CryptoKey;
  const publicKey = (await importJWK(publicPart, alg)) as CryptoKey;
  return { alg, kid, privateKey, publicKey, publicJwk: { ...publicPart, kid, alg, use: 'sig' } };
}

/** A new private key as a JWK, to be stored (a file, a database) and imported. */
export async function generatePrivateJwk(alg: SigningAlgorithm = 'ES256'): Promise<JWK> {
  const { privateKey } = await generateKeyPair(alg, { extractable: true });
  return exportJWK(privateKey);
}

export async function generateSigningKey(alg: SigningAlgorithm = 'ES256'): Promise<SigningKey> {
  return importSigningKey(alg, await generatePrivateJwk(alg));
}

interface KeyFile {
  alg: SigningAlgorithm;
  privateJwk: JWK;
}

function isKeyFile(value: unknown): value is KeyFile {
  const file = value as Partial<KeyFile> | null;
  return (
    typeof file === 'object' &&
    file !== null &&
    (file.alg === 'ES256' || file.alg === 'RS256') &&
    typeof file.privateJwk === 'object' &&
    file.privateJwk !== null
  );
}

/**
 * Loads the signing key kept at `file`, or creates one there (mode 0600) on first use, so
 * tokens stay valid across restarts of a host that has no key management of its own.
 */
export async function loadOrCreateSigningKey(
  file: string,
  alg: SigningAlgorithm = 'ES256',
): Promise<SigningKey & { created: boolean }> {
  let text: string | undefined;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (text !== undefined) {
    const parsed: unknown = JSON.parse(text);
    if (!isKeyFile(parsed)) throw new InvalidArgumentError(`${file} is not a signing key file`);
    return { ...(await importSigningKey(parsed.alg, parsed.privateJwk)), created: false };
  }
  const privateJwk = await generatePrivateJwk(alg);
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, JSON.stringify({ alg, privateJwk } satisfies KeyFile), {
    mode: 0o600,
  });
  await rename(temporary, file);
  return { ...(await importSigningKey(alg, privateJwk)), created: true };
}

/** The JWKS document publishing the public halves of `keys`. */
export function publicJwks(...keys: SigningKey[]): { keys: JWK[] } {
  return { keys: keys.map((key) => key.publicJwk) };
}

export interface SignTokenRequest {
  issuer: string;
  audience: string;
  subject: string;
  ttlSeconds: number;
  /** Extra claims such as `scope` and `client_id`. */
  claims?: Record<string, unknown>;
  /** JOSE `typ` header; `at+jwt` for OAuth access tokens (RFC 9068). */
  type?: string;
  clock?: Clock;
}

/** Signs a JWT with `iss`, `aud`, `sub`, `iat`, `exp` and a random `jti`. */
export async function signToken(
  key: SigningKey,
  request: SignTokenRequest,
): Promise<{ token: string; expiresIn: number }> {
  const now = Math.floor((request.clock ?? systemClock)() / 1000);
  const token = await new SignJWT({ ...request.claims })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: request.type ?? 'JWT' })
    .setIssuer(request.issuer)
    .setAudience(request.audience)
    .setSubject(request.subject)
    .setIssuedAt(now)
    .setExpirationTime(now + request.ttlSeconds)
    .setJti(randomUUID())
    .sign(key.privateKey);
  return { token, expiresIn: request.ttlSeconds };
}

/** An `issueAccessToken` hook for hosts without their own token generation. */
export function createAccessTokenIssuer(
  key: SigningKey,
  options: { ttlSeconds?: number; clock?: Clock } = {},
): IssueAccessTokenHook {
  const ttlSeconds = options.ttlSeconds ?? 300;
  return (request) =>
    signToken(key, {
      issuer: request.issuer,
      audience: request.audience,
      subject: request.userId,
      ttlSeconds,
      type: 'at+jwt',
      claims: { scope: request.scope, client_id: request.clientId },
      clock: options.clock,
    });
}
