import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  basicCredentials,
  FixedWindowThrottle,
  hashSecret,
  randomToken,
  reserveAll,
  sha256Base64Url,
  verifySecret,
} from '@mcp-identity/common';
import type { ManagementUser } from '../../config.js';
import type { ManagementUserStore } from '../store.js';

const ADMIN_FILE = 'management-admin.json';

/** Without a database, the generated admin lives in one file of the data directory (0600). */
export function adminFileUsers(dataDir: string): ManagementUserStore {
  const file = path.join(dataDir, ADMIN_FILE);
  return {
    list: async () =>
      existsSync(file) ? [JSON.parse(readFileSync(file, 'utf8')) as ManagementUser] : [],
    addFirst: async (user) => {
      try {
        writeFileSync(file, `${JSON.stringify(user, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
        return true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
        throw error;
      }
    },
  };
}

/**
 * The management users: those configured, or else those of the store; when it has none, one
 * `admin` whose password is generated, stored only as a hash and reported once through
 * `announce` (the caller prints it). Instances that start together create one admin between them.
 */
export async function resolveManagementUsers(
  configured: ManagementUser[],
  stored: ManagementUserStore,
  announce: (username: string, password: string) => void,
): Promise<ManagementUser[]> {
  if (configured.length > 0) return configured;
  const existing = await stored.list();
  if (existing.length > 0) return existing;
  const password = randomToken(18);
  const user: ManagementUser = {
    username: 'admin',
    passwordHash: await hashSecret(password),
    roles: ['admin'],
  };
  if (!(await stored.addFirst(user))) return stored.list();
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
    const credentials = basicCredentials(header);
    if (!credentials) return { ok: false };
    const { user: username, password } = credentials;
    // The cache key is a digest of both halves: never the password itself, never the header.
    const digest = sha256Base64Url(`${username}:${password}`);
    const hit = this.verified.get(digest);
    if (hit && hit.until > this.now()) return { ok: true, user: hit.user };
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
