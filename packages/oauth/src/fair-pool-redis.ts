/**
 * Common's `FairPool` rule in Redis, as Lua the store's scripts share, so that admitting an
 * entry, displacing others to make room and storing it are one atomic step for every instance,
 * and the Redis store evicts exactly what the memory store does. The keys of a pool start with
 * its prefix `pp`:
 *
 * - `all`: every entry by expiry (for pruning); `meta`: entry → its network and client;
 * - `seq`: a counter ordering admissions and count changes;
 * - `net:<network>`: a network's entries by admission; `nets`: networks by weight;
 * - `cli:<client>`: a client's entries; `clinet:<client>`: its networks by weight, each with
 *   its entries in `clinet:<client>|<network>`.
 *
 * A weight orders groups as `FairPool`'s tally does: more entries first; of as many, the group
 * that reached that count first. `count * 2^39 + (2^39 - 1 - seq)` is exact below 2^14
 * entries per group and 2^39 changes of a pool (beyond, only the order of ties blurs).
 */
const POOL_FUNCTIONS = `
local SPAN = 549755813888
local function nextSeq(pp) return redis.call('INCR', pp .. 'seq') end
local function reweigh(pp, groups, member, entries)
  local count = redis.call('ZCARD', entries)
  if count == 0 then
    redis.call('ZREM', groups, member)
  else
    redis.call('ZADD', groups, count * SPAN + (SPAN - 1 - nextSeq(pp) % SPAN), member)
  end
end
local function oldestOf(entries) return redis.call('ZRANGE', entries, 0, 0)[1] end
local function heaviestOf(groups) return redis.call('ZREVRANGE', groups, 0, 0)[1] end
local function poolRemove(pp, id)
  local meta = redis.call('HGET', pp .. 'meta', id)
  if not meta then return false end
  local m = cjson.decode(meta)
  redis.call('HDEL', pp .. 'meta', id)
  redis.call('ZREM', pp .. 'all', id)
  redis.call('ZREM', pp .. 'net:' .. m.n, id)
  reweigh(pp, pp .. 'nets', m.n, pp .. 'net:' .. m.n)
  local byNetwork = pp .. 'clinet:' .. m.c
  redis.call('ZREM', pp .. 'cli:' .. m.c, id)
  redis.call('ZREM', byNetwork .. '|' .. m.n, id)
  reweigh(pp, byNetwork, m.n, byNetwork .. '|' .. m.n)
  return true
end
local function poolAdd(pp, id, network, client, expiresAt)
  local order = nextSeq(pp)
  local byNetwork = pp .. 'clinet:' .. client
  redis.call('ZADD', pp .. 'all', expiresAt, id)
  redis.call('HSET', pp .. 'meta', id, cjson.encode({ n = network, c = client }))
  redis.call('ZADD', pp .. 'net:' .. network, order, id)
  reweigh(pp, pp .. 'nets', network, pp .. 'net:' .. network)
  redis.call('ZADD', pp .. 'cli:' .. client, order, id)
  redis.call('ZADD', byNetwork .. '|' .. network, order, id)
  reweigh(pp, byNetwork, network, byNetwork .. '|' .. network)
end
`;

/**
 * ARGV: pool prefix, the sorted set counted against the cap (the pool's `all`, or a larger set
 * the pool is part of), the prefix of the entries' values, now, id, network, client, expiry,
 * cap, per-network and per-client quotas, the value. Prunes what expired, then as
 * `FairPool.admit`: at the network's quota its oldest goes, at the client's quota the client's
 * oldest from its heaviest network, and while the counted set is at the cap the oldest of the
 * heaviest network; stores the value until its expiry. Returns 1, or 0 when the cap is reached
 * and the pool is empty (the counted set holds only entries outside it; nothing is stored).
 */
export const ADMIT_TO_POOL = `${POOL_FUNCTIONS}
local pp, total, values = ARGV[1], ARGV[2], ARGV[3]
local now = tonumber(ARGV[4])
local id, network, client = ARGV[5], ARGV[6], ARGV[7]
local expiresAt, cap = tonumber(ARGV[8]), tonumber(ARGV[9])
local perNetwork, perClient = tonumber(ARGV[10]), tonumber(ARGV[11])
local function evict(victim)
  if not victim then return false end
  poolRemove(pp, victim)
  redis.call('ZREM', total, victim)
  redis.call('DEL', values .. victim)
  return true
end
for _, expired in ipairs(redis.call('ZRANGEBYSCORE', pp .. 'all', '-inf', now)) do
  evict(expired)
end
redis.call('ZREMRANGEBYSCORE', total, '-inf', now)
if redis.call('ZCARD', pp .. 'net:' .. network) >= perNetwork then
  evict(oldestOf(pp .. 'net:' .. network))
end
if redis.call('ZCARD', pp .. 'cli:' .. client) >= perClient then
  local byNetwork = pp .. 'clinet:' .. client
  local busiest = heaviestOf(byNetwork)
  if busiest then evict(oldestOf(byNetwork .. '|' .. busiest)) end
end
while redis.call('ZCARD', total) >= cap do
  local busiest = heaviestOf(pp .. 'nets')
  if not busiest or not evict(oldestOf(pp .. 'net:' .. busiest)) then return 0 end
end
redis.call('SET', values .. id, ARGV[12], 'PXAT', expiresAt)
redis.call('ZADD', total, expiresAt, id)
poolAdd(pp, id, network, client, expiresAt)
return 1
`;

/**
 * ARGV: pool prefix, id, and optionally the key of its value. Takes an entry out of its pool (no
 * longer evictable) or, with the key, uses it up: returns its value and deletes it, so of
 * concurrent calls exactly one gets it.
 */
export const LEAVE_POOL = `${POOL_FUNCTIONS}
poolRemove(ARGV[1], ARGV[2])
if ARGV[3] then return redis.call('GETDEL', ARGV[3]) end
return false
`;

/** The bounds of an admission; what the memory store gives `FairPool`, in the same terms. */
export interface PoolAdmission {
  network: string;
  client: string;
  expiresAt: number;
  now: number;
  cap: number;
  perNetwork: number;
  perClient: number;
}

/** The arguments of `ADMIT_TO_POOL` after the pool's prefix, counted set and value prefix. */
export function admissionArguments(
  id: string,
  admission: PoolAdmission,
  value: string,
): Array<string | number> {
  return [
    admission.now,
    id,
    admission.network,
    admission.client,
    admission.expiresAt,
    admission.cap,
    admission.perNetwork,
    admission.perClient,
    value,
  ];
}
