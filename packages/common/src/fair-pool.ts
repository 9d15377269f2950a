/** The bounds of a `FairPool`: entries at once, and per network and per client among them. */
import { InvalidArgumentError } from './errors.js';
export type FairPoolLimits = { cap: number; perNetwork: number; perClient: number };

/**
 * Counts per key with the largest count found in O(1): counts move by one at a time, so the
 * largest drops by at most one when its last key goes down.
 */
class Tally {
  readonly #counts = new Map<string, number>();
  /** Keys by count; each set in the order its keys reached that count. */
  readonly #byCount = new Map<number, Set<string>>();
  #largest = 0;

  count(key: string): number {
    return this.#counts.get(key) ?? 0;
  }

  /** A key holding the largest count (the first to reach it); undefined when empty. */
  heaviest(): string | undefined {
    return this.#byCount.get(this.#largest)?.values().next().value;
  }

  add(key: string, delta: 1 | -1): void {
    const before = this.count(key);
    const after = before + delta;
    const bucket = this.#byCount.get(before);
    bucket?.delete(key);
    if (bucket?.size === 0) {
      this.#byCount.delete(before);
      if (before === this.#largest && delta === -1) this.#largest = after;
    }
    if (after === 0) {
      this.#counts.delete(key);
      return;
    }
    this.#counts.set(key, after);
    let next = this.#byCount.get(after);
    if (!next) {
      next = new Set();
      this.#byCount.set(after, next);
    }
    next.add(key);
    if (after > this.#largest) this.#largest = after;
  }
}

type Entry = { network: string; client: string };

/**
 * The bookkeeping of a capped pool of pending entries (login forms, say) that no caller can
 * fill for everyone: instead of refusing an entry, `admit` names the entries it displaces.
 * Beyond a network's quota its own oldest entry goes; beyond a client's quota, the client's
 * oldest entry from the network holding most of its entries; with the pool full, the oldest
 * entry of the network holding the most. A flood from many addresses so pushes out its own
 * entries first, and a network that holds few keeps them. `network` is meant to be
 * `clientNetwork(ip)`, `client` an OAuth client id. Every operation is O(1).
 *
 * The pool keeps ids only: the caller stores the entries, deletes the displaced ones and
 * calls `remove` for entries that end otherwise (used, expired).
 */
export class FairPool {
  readonly #limits: FairPoolLimits;
  readonly #entries = new Map<string, Entry>();
  /** Ids by network, oldest first (a Set keeps insertion order). */
  readonly #byNetwork = new Map<string, Set<string>>();
  /** Ids by client, then by network, oldest first. */
  readonly #byClient = new Map<string, Map<string, Set<string>>>();
  readonly #networks = new Tally();
  readonly #clients = new Tally();
  /** Per client, its entries by network. */
  readonly #clientNetworks = new Map<string, Tally>();

  constructor(limits: FairPoolLimits) {
    for (const [name, value] of Object.entries(limits)) {
      if (!Number.isSafeInteger(value) || value <= 0) {
        throw new InvalidArgumentError(`FairPool: ${name} must be a positive integer`);
      }
    }
    this.#limits = { ...limits };
  }

  get size(): number {
    return this.#entries.size;
  }

  has(id: string): boolean {
    return this.#entries.has(id);
  }

  /** Adds `id` (a new id) and returns the ids it displaced, which the caller must delete. */
  admit(id: string, network: string, client: string): string[] {
    const displaced: string[] = [];
    const evictOldest = (ids: Set<string> | undefined) => {
      const oldest = ids?.values().next().value;
      if (oldest !== undefined && this.remove(oldest)) displaced.push(oldest);
    };
    if (this.#networks.count(network) >= this.#limits.perNetwork) {
      evictOldest(this.#byNetwork.get(network));
    }
    if (this.#clients.count(client) >= this.#limits.perClient) {
      const busiest = this.#clientNetworks.get(client)?.heaviest();
      if (busiest !== undefined) evictOldest(this.#byClient.get(client)?.get(busiest));
    }
    if (this.#entries.size >= this.#limits.cap) {
      const busiest = this.#networks.heaviest();
      if (busiest !== undefined) evictOldest(this.#byNetwork.get(busiest));
    }
    this.#entries.set(id, { network, client });
    setOf(this.#byNetwork, network).add(id);
    setOf(mapOf(this.#byClient, client), network).add(id);
    this.#networks.add(network, 1);
    this.#clients.add(client, 1);
    let tally = this.#clientNetworks.get(client);
    if (!tally) {
      tally = new Tally();
      this.#clientNetworks.set(client, tally);
    }
    tally.add(network, 1);
    return displaced;
  }

  /**
   * Displaces the oldest entry of the network holding the most and returns it (undefined when
   * empty), for a caller whose cap also counts entries kept outside the pool.
   */
  evictHeaviest(): string | undefined {
    const busiest = this.#networks.heaviest();
    const oldest =
      busiest === undefined ? undefined : this.#byNetwork.get(busiest)?.values().next().value;
    if (oldest !== undefined) this.remove(oldest);
    return oldest;
  }

  /** Forgets `id`; false when the pool did not hold it. */
  remove(id: string): boolean {
    const entry = this.#entries.get(id);
    if (!entry) return false;
    const { network, client } = entry;
    this.#entries.delete(id);
    deleteFrom(this.#byNetwork, network, id);
    const clientNetworks = this.#byClient.get(client)!;
    deleteFrom(clientNetworks, network, id);
    if (clientNetworks.size === 0) this.#byClient.delete(client);
    this.#networks.add(network, -1);
    this.#clients.add(client, -1);
    const tally = this.#clientNetworks.get(client)!;
    tally.add(network, -1);
    if (tally.heaviest() === undefined) this.#clientNetworks.delete(client);
    return true;
  }
}

function setOf(map: Map<string, Set<string>>, key: string): Set<string> {
  let set = map.get(key);
  if (!set) {
    set = new Set();
    map.set(key, set);
  }
  return set;
}

function mapOf(map: Map<string, Map<string, Set<string>>>, key: string): Map<string, Set<string>> {
  let inner = map.get(key);
  if (!inner) {
    inner = new Map();
    map.set(key, inner);
  }
  return inner;
}

function deleteFrom(map: Map<string, Set<string>>, key: string, id: string): void {
  const set = map.get(key)!;
  set.delete(id);
  if (set.size === 0) map.delete(key);
}
