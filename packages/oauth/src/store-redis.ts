import { connectRedis, inRedis, redisReady } from '@mcp-identity/common';
import type { Redis } from 'ioredis';
import { ADMIT_TO_POOL, admissionArguments, LEAVE_POOL } from './fair-pool-redis.js';
import type {
  AuthorizationCodeEntry,
  AuthorizationTransaction,
  ClientAdmission,
  CodeRedemption,
  LoginAdmission,
  OAuthStore,
  RefreshPresentation,
  RefreshTokenEntry,
  RefreshTokenUse,
  RegisteredClient,
} from './store.js';

/**
 * Deletes every refresh token of a family and the family itself. Shared by the scripts below,
 * so that revocation happens in the same atomic step as the check that triggers it.
 */
const REVOKE_FAMILY = `
local function revoke(prefix, family)
  local familyKey = prefix .. 'family:' .. family
  for _, hash in ipairs(redis.call('SMEMBERS', familyKey)) do
    redis.call('DEL', prefix .. 'refresh:' .. hash)
  end
  redis.call('DEL', familyKey)
end
`;

/**
 * KEYS: code, redeemed-code record. ARGV: key prefix. A live code is removed and remembered as
 * redeemed until it would have expired; presenting it again revokes its grant's refresh tokens
 * (RFC 6749 §4.1.2). One script, so of any number of concurrent exchanges exactly one wins.
 */
const CONSUME_CODE = `${REVOKE_FAMILY}
local entry = redis.call('GET', KEYS[1])
if entry then
  local code = cjson.decode(entry)
  redis.call('DEL', KEYS[1])
  redis.call('SET', KEYS[2], code.grantId, 'PXAT', code.expiresAt)
  return {'redeemed', entry}
end
local grant = redis.call('GET', KEYS[2])
if not grant then return {'unknown'} end
revoke(ARGV[1], grant)
return {'replayed', grant}
`;

/**
 * KEYS: refresh token. ARGV: key prefix, arrival (ms), race window (ms), and to rotate: the
 * successor's hash, its entry (JSON), the rotation time (ms). One script, so checking the token,
 * marking it used and adding its successor to the family are one step: a revocation (here or in
 * another script) sees either no successor or the successor, never one stored after it. The
 * rule is `RefreshTokenUse`'s: a token used before is `raced` within the window after its
 * rotation, `reused` (RFC 9700 §4.14.2, the family revoked) after it. `used` stays beside
 * `rotatedAt` so that an entry written by an older version still counts as used.
 */
const PRESENT_REFRESH = `${REVOKE_FAMILY}
local stored = redis.call('GET', KEYS[1])
if not stored then return {'unknown'} end
local token = cjson.decode(stored)
local arrivedAt = tonumber(ARGV[2])
if token.used then
  if arrivedAt < (tonumber(token.rotatedAt) or 0) + tonumber(ARGV[3]) then return {'raced'} end
  revoke(ARGV[1], token.familyId)
  return {'reused', stored}
end
if token.expiresAt <= arrivedAt then
  redis.call('DEL', KEYS[1])
  return {'unknown'}
end
if not ARGV[4] then return {'live', stored} end
token.used = true
token.rotatedAt = tonumber(ARGV[6])
redis.call('SET', KEYS[1], cjson.encode(token), 'KEEPTTL')
local successor = cjson.decode(ARGV[5])
successor.familyId = token.familyId
local familyKey = ARGV[1] .. 'family:' .. token.familyId
redis.call('SET', ARGV[1] .. 'refresh:' .. ARGV[4], cjson.encode(successor), 'PXAT', successor.expiresAt)
redis.call('SADD', familyKey, ARGV[4])
-- The family lives as long as its newest token.
redis.call('PEXPIREAT', familyKey, successor.expiresAt)
return {'rotated', stored}
`;

const REVOKE = `${REVOKE_FAMILY}
revoke(ARGV[1], ARGV[2])
return 1
`;

/** The scripts above, as commands of the client. */
interface Scripts {
  consumeCode(code: string, redeemed: string, prefix: string): Promise<[string, string?]>;
  presentRefresh(
    refresh: string,
    prefix: string,
    arrivedAt: number,
    raceWindowMs: number,
    ...rotation: [successorHash: string, successor: string, rotatedAt: number] | []
  ): Promise<[string, string?]>;
  revokeFamily(prefix: string, family: string): Promise<number>;
  admitToPool(
    pool: string,
    counted: string,
    values: string,
    ...admission: Array<string | number>
  ): Promise<number>;
  leavePool(pool: string, id: string, valueKey?: string): Promise<string | null>;
}

interface StoredRefreshToken extends RefreshTokenEntry {
  used?: boolean;
  rotatedAt?: number;
}

/** Never-used clients are displaced only for the cap on live clients, as in the memory store. */
const UNUSED_CLIENT_QUOTAS = {
  client: '',
  perNetwork: Number.MAX_SAFE_INTEGER,
  perClient: Number.MAX_SAFE_INTEGER,
};

function entryOf(stored: string): RefreshTokenEntry {
  const { used: _used, rotatedAt: _rotatedAt, ...entry } = JSON.parse(stored) as StoredRefreshToken;
  return entry;
}

/**
 * Area A state in Redis (or Valkey), shared by every instance behind a load balancer: each
 * entry expires with its own lifetime (a Redis TTL), and single use — of a code, a login
 * transaction, a refresh token — is one atomic step (GETDEL or a script). Uses one standalone
 * Redis (the scripts touch keys they derive, which Redis Cluster would refuse). While Redis is
 * unreachable every call fails fast with `StateUnavailableError` (HTTP 503).
 */
export class RedisOAuthStore implements OAuthStore {
  private readonly redis: Redis & Scripts;

  constructor(
    url: string,
    private readonly prefix = 'mcp-identity:oauth:',
  ) {
    const redis = connectRedis(url);
    redis.defineCommand('consumeCode', { numberOfKeys: 2, lua: CONSUME_CODE });
    redis.defineCommand('presentRefresh', { numberOfKeys: 1, lua: PRESENT_REFRESH });
    redis.defineCommand('revokeFamily', { numberOfKeys: 0, lua: REVOKE });
    redis.defineCommand('admitToPool', { numberOfKeys: 0, lua: ADMIT_TO_POOL });
    redis.defineCommand('leavePool', { numberOfKeys: 0, lua: LEAVE_POOL });
    this.redis = redis as Redis & Scripts;
  }

  /** Resolves once connected; rejects after `timeoutMs` (to fail early at start-up). */
  async ready(timeoutMs = 5_000): Promise<void> {
    await redisReady(this.redis, timeoutMs);
  }

  private key(kind: string, id: string): string {
    return `${this.prefix}${kind}:${id}`;
  }

  /** The pool of never-used clients; every live client counts against the cap (`index:clients`). */
  private get clientPool() {
    return {
      pool: `${this.prefix}pool:clients:`,
      counted: this.key('index', 'clients'),
      values: `${this.prefix}client:`,
    };
  }

  /** The pool of pending login transactions, counted by itself. */
  private get loginPool() {
    const pool = `${this.prefix}pool:logins:`;
    return { pool, counted: `${pool}all`, values: `${this.prefix}transaction:` };
  }

  async saveClient(client: RegisteredClient, admission: ClientAdmission): Promise<boolean> {
    const { pool, counted, values } = this.clientPool;
    const stored = await inRedis(() =>
      this.redis.admitToPool(
        pool,
        counted,
        values,
        ...admissionArguments(
          client.clientId,
          { ...UNUSED_CLIENT_QUOTAS, ...admission, expiresAt: client.expiresAt },
          JSON.stringify(client),
        ),
      ),
    );
    return stored === 1;
  }

  async markClientUsed(clientId: string): Promise<void> {
    await inRedis(() => this.redis.leavePool(this.clientPool.pool, clientId));
  }

  async getClient(clientId: string): Promise<RegisteredClient | undefined> {
    const value = await inRedis(() => this.redis.get(this.key('client', clientId)));
    return value === null ? undefined : (JSON.parse(value) as RegisteredClient);
  }

  /** Entries expire by themselves (PXAT); the pools prune theirs when admitting. */
  async pruneExpired(): Promise<void> {}

  async saveCode(codeHash: string, entry: AuthorizationCodeEntry): Promise<void> {
    await inRedis(() =>
      this.redis.set(this.key('code', codeHash), JSON.stringify(entry), 'PXAT', entry.expiresAt),
    );
  }

  async consumeCode(codeHash: string): Promise<CodeRedemption> {
    const [outcome, value] = await inRedis(() =>
      this.redis.consumeCode(
        this.key('code', codeHash),
        this.key('redeemed', codeHash),
        this.prefix,
      ),
    );
    if (outcome === 'redeemed') {
      return { outcome, entry: JSON.parse(value as string) as AuthorizationCodeEntry };
    }
    if (outcome === 'replayed') return { outcome, grantId: value as string };
    return { outcome: 'unknown' };
  }

  async saveTransaction(
    tokenHash: string,
    transaction: AuthorizationTransaction,
    admission: LoginAdmission,
  ): Promise<void> {
    const { pool, counted, values } = this.loginPool;
    await inRedis(() =>
      this.redis.admitToPool(
        pool,
        counted,
        values,
        ...admissionArguments(
          tokenHash,
          { ...admission, client: transaction.clientId, expiresAt: transaction.expiresAt },
          JSON.stringify(transaction),
        ),
      ),
    );
  }

  async consumeTransaction(tokenHash: string): Promise<AuthorizationTransaction | undefined> {
    const { pool, values } = this.loginPool;
    const value = await inRedis(() =>
      this.redis.leavePool(pool, tokenHash, `${values}${tokenHash}`),
    );
    return value ? (JSON.parse(value) as AuthorizationTransaction) : undefined;
  }

  async saveRefreshToken(tokenHash: string, entry: RefreshTokenEntry): Promise<void> {
    const stored: StoredRefreshToken = { ...entry, used: false };
    const family = this.key('family', entry.familyId);
    await inRedis(() =>
      this.redis
        .multi()
        .set(this.key('refresh', tokenHash), JSON.stringify(stored), 'PXAT', entry.expiresAt)
        .sadd(family, tokenHash)
        // The family lives as long as its newest token.
        .pexpireat(family, entry.expiresAt)
        .exec(),
    );
  }

  async presentRefreshToken(
    tokenHash: string,
    presentation: RefreshPresentation,
  ): Promise<RefreshTokenUse> {
    const { rotation } = presentation;
    const [outcome, value] = await inRedis(() =>
      this.redis.presentRefresh(
        this.key('refresh', tokenHash),
        this.prefix,
        presentation.arrivedAt,
        presentation.raceWindowMs,
        ...(rotation === undefined
          ? []
          : ([
              rotation.successorHash,
              JSON.stringify({ ...rotation.successor, used: false }),
              rotation.rotatedAt,
            ] as const)),
      ),
    );
    if (outcome === 'live' || outcome === 'rotated' || outcome === 'reused') {
      return { outcome, entry: entryOf(value as string) };
    }
    return outcome === 'raced' ? { outcome } : { outcome: 'unknown' };
  }

  async revokeFamily(familyId: string): Promise<void> {
    await inRedis(() => this.redis.revokeFamily(this.prefix, familyId));
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
