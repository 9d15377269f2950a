import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  FixedWindowThrottle,
  hashSecret,
  randomToken,
  reserveAll,
  sha256Base64Url,
  verifySecret,
} from '@mcp-identity/common';
import type { ManagementUser } from '../config.js';

const ADMIN_FILE = 'management-admin.json';

/**
 * The management users: those configured, or else one `admin` whose password is generated on
 * first start, stored only as a hash in the data directory and reported once through
 * `announce` (the caller prints it).
 */
export async function resolveManagementUsers(
  configured: ManagementUser[],
  dataDir: string,
  announce: (username: string, password: string) => void,
): Promise<ManagementUser[]> {
  if (configured.length > 0) return configured;
  const file = path.join(dataDir, ADMIN_FILE);
  if (existsSync(file)) return [JSON.parse(readFileSync(file, 'utf8')) as ManagementUser];
  const password = randomToken(18);
  const user: ManagementUser = {
    username: 'admin',
    passwordHash: await hashSecret(password),
    roles: ['admin'],
  };
  writeFileSync(file, `${JSON.stringify(user, null, 2)}\n`, { mode: 0o600 });
  announce(user.username, password);
  return [user];
}

/** Failed management logins allowed per client address and per username in a window. */
const LOGIN_ATTEMPTS = 10;
const LOGIN_WINDOW_MS = 5 * 60_000;

export type BasicOutcome =
  | { ok: true; user: ManagementUser }
  | { ok: false; retryAfterSeconds?: number };

/**
 * HTTP Basic authentication against scrypt hashes. Unknown users cost the same scrypt work as
 * known ones, and a verified credential is remembered (by its digest) for a few minutes so an
 * automation loop does not pay scrypt on every call. Every other attempt is counted per client
 * address and per username before scrypt runs, so concurrent guesses cannot all be evaluated;
 * a success gives its attempt back.
 */
export class BasicAuthenticator {
  private readonly verified = new Map<string, { user: ManagementUser; until: number }>();
  private readonly decoyHash: Promise<string> = hashSecret(randomToken(16));
  private readonly byAddress: FixedWindowThrottle;
  private readonly byUsername: FixedWindowThrottle;

  constructor(
    private readonly users: ManagementUser[],
    private readonly now: () => number = Date.now,
  ) {
    const options = { limit: LOGIN_ATTEMPTS, windowMs: LOGIN_WINDOW_MS, clock: now };
    this.byAddress = new FixedWindowThrottle(options);
    this.byUsername = new FixedWindowThrottle(options);
  }

  async authenticate(header: string | undefined, address: string): Promise<BasicOutcome> {
    const match = /^Basic +([A-Za-z0-9+/]+=*) *$/i.exec(header ?? '');
    if (!match) return { ok: false };
    const digest = sha256Base64Url(match[1] as string);
    const hit = this.verified.get(digest);
    if (hit && hit.until > this.now()) return { ok: true, user: hit.user };
    const decoded = Buffer.from(match[1] as string, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) return { ok: false };
    const username = decoded.slice(0, colon);
    const password = decoded.slice(colon + 1);
    const reservations = [
      [this.byAddress, address],
      [this.byUsername, username],
    ] as const;
    const reserved = reserveAll(reservations);
    if (!reserved.allowed) return { ok: false, retryAfterSeconds: reserved.retryAfterSeconds };
    const user = this.users.find((u) => u.username === username);
    const ok = await verifySecret(password, user?.passwordHash ?? (await this.decoyHash));
    if (!ok || !user) return { ok: false };
    for (const [throttle, key] of reservations) throttle.release(key);
    if (this.verified.size > 1000) this.verified.clear();
    this.verified.set(digest, { user, until: this.now() + 5 * 60_000 });
    return { ok: true, user };
  }
}
