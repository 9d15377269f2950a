/**
 * `compute` memoised by its string argument in a map emptied once it holds `limit` entries:
 * for keys that recur (names from loaded documents or configuration, labels of a hot path), where
 * the limit only bounds what unusual input can make it hold. A throwing `compute` caches nothing.
 */
export function boundedMemo<V>(limit: number, compute: (key: string) => V): (key: string) => V {
  const values = new Map<string, V>();
  return (key) => {
    let value = values.get(key);
    if (value === undefined) {
      value = compute(key);
      if (values.size >= limit) values.clear();
      values.set(key, value);
    }
    return value;
  };
}

/**
 * `compute` memoised by its object argument, held weakly: for parts of a loaded document,
 * which never change once loaded.
 */
export function weakMemo<K extends object, V>(compute: (key: K) => V): (key: K) => V {
  const values = new WeakMap<K, V>();
  return (key) => {
    let value = values.get(key);
    if (value === undefined) {
      value = compute(key);
      values.set(key, value);
    }
    return value;
  };
}

/**
 * Adds an entry a cache just missed to a map that keeps at most `limit` (≥ 1) entries, first
 * dropping the oldest one when it is full (a `Map` iterates in insertion order): first in, first
 * out, for caches whose entries are cheap to make again.
 */
export function addBounded<K, V>(map: Map<K, V>, key: K, value: V, limit: number): void {
  if (map.size >= limit) {
    const oldest = map.keys().next();
    if (!oldest.done) map.delete(oldest.value);
  }
  map.set(key, value);
}
