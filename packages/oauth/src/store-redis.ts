import { connectRedis, inRedis, redisReady } from '@mcp-identity/common';
import type { Redis } from 'ioredis';
import type {
  AuthorizationCodeEntry,
  AuthorizationTransaction,
  CodeRedemption,
  OAuthStore,
  RefreshRotation,
  RefreshTokenEntry,
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
 * KEYS: refresh token. ARGV: key prefix, now (ms). A token already used revokes its family
 * (RFC 9700 §4.14.2); a live one is marked used, keeping its expiry.
 */
const ROTATE_REFRESH = `${REVOKE_FAMILY}
local stored = redis.call('GET', KEYS[1])
if not stored then return {'unknown'} end
local token = cjson.decode(stored)
if token.used then
  revoke(ARGV[1], token.familyId)
  return {'reused', stored}
end
if token.expiresAt <= tonumber(ARGV[2]) then
  redis.call('DEL', KEYS[1])
  return {'unknown'}
end
token.used = true
redis.call('SET', KEYS[1], cjson.encode(token), 'KEEPTTL')
return {'rotated', stored}
`;

const REVOKE = `${REVOKE_FAMILY}
revoke(ARGV[1], ARGV[2])
return 1
`;

/** The scripts above, as commands of the client. */
interface Scripts {
  consumeCode(code: string, redeemed: string, prefix: string): Promise<[string, string?]>;
  rotateRefresh(refresh: string, prefix: string, now: number): Promise<[string, string?]>;
  revokeFamily(prefix: string, family: string): Promise<number>;
}

interface StoredRefreshToken extends RefreshTokenEntry {
  used: boolean;
}

function withoutUsed(stored: StoredRefreshToken): RefreshTokenEntry {
  const { used: _used, ...entry } = stored;
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
    redis.defineCommand('rotateRefresh', { numberOfKeys: 1, lua: ROTATE_REFRESH });
    redis.defineCommand('revokeFamily', { numberOfKeys: 0, lua: REVOKE });
    this.redis = redis as Redis & Scripts;
  }

  /** Resolves once connected; rejects after `timeoutMs` (to fail early at start-up). */
  async ready(timeoutMs = 5_000): Promise<void> {
    await redisReady(this.redis, timeoutMs);
  }

  private key(kind: string, id: string): string {
    return `${this.prefix}${kind}:${id}`;
  }

  async pruneExpiredClients(now: number): Promise<void> {
    await inRedis(() => this.redis.zremrangebyscore(this.key('index', 'clients'), '-inf', now));
  }

  async countClients(): Promise<number> {
    return inRedis(() => this.redis.zcard(this.key('index', 'clients')));
  }

  async saveClient(client: RegisteredClient): Promise<void> {
    await inRedis(() =>
      this.redis
        .multi()
        .set(this.key('client', client.clientId), JSON.stringify(client), 'PXAT', client.expiresAt)
        .zadd(this.key('index', 'clients'), client.expiresAt, client.clientId)
        .exec(),
    );
  }

  async getClient(clientId: string): Promise<RegisteredClient | undefined> {
    const value = await inRedis(() => this.redis.get(this.key('client', clientId)));
    return value === null ? undefined : (JSON.parse(value) as RegisteredClient);
  }

  /** Entries expire by themselves; only the count of pending transactions needs pruning. */
  async pruneExpired(now: number): Promise<void> {
    await inRedis(() =>
      this.redis.zremrangebyscore(this.key('index', 'transactions'), '-inf', now),
    );
  }

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

  async countTransactions(): Promise<number> {
    return inRedis(() => this.redis.zcard(this.key('index', 'transactions')));
  }

  async saveTransaction(tokenHash: string, transaction: AuthorizationTransaction): Promise<void> {
    await inRedis(() =>
      this.redis
        .multi()
        .set(
          this.key('transaction', tokenHash),
          JSON.stringify(transaction),
          'PXAT',
          transaction.expiresAt,
        )
        .zadd(this.key('index', 'transactions'), transaction.expiresAt, tokenHash)
        .exec(),
    );
  }

  async consumeTransaction(tokenHash: string): Promise<AuthorizationTransaction | undefined> {
    const results = await inRedis(() =>
      this.redis
        .multi()
        .getdel(this.key('transaction', tokenHash))
        .zrem(this.key('index', 'transactions'), tokenHash)
        .exec(),
    );
    const value = results?.[0]?.[1] as string | null | undefined;
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

  async getRefreshToken(tokenHash: string, now: number): Promise<RefreshTokenEntry | undefined> {
    const value = await inRedis(() => this.redis.get(this.key('refresh', tokenHash)));
    if (value === null) return undefined;
    const stored = JSON.parse(value) as StoredRefreshToken;
    if (stored.used || stored.expiresAt <= now) return undefined;
    return withoutUsed(stored);
  }

  async rotateRefreshToken(tokenHash: string, now: number): Promise<RefreshRotation> {
    const [outcome, value] = await inRedis(() =>
      this.redis.rotateRefresh(this.key('refresh', tokenHash), this.prefix, now),
    );
    if (outcome === 'rotated' || outcome === 'reused') {
      return { outcome, entry: withoutUsed(JSON.parse(value as string) as StoredRefreshToken) };
    }
    return { outcome: 'unknown' };
  }

  async revokeFamily(familyId: string): Promise<void> {
    await inRedis(() => this.redis.revokeFamily(this.prefix, familyId));
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
