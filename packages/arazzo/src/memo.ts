/**
 * `compute` memoised by its string argument in a map emptied once it holds `limit` entries:
 * the keys come from loaded documents or the environment, so they are few, and the limit only
 * bounds what unusual input can make it hold. A throwing `compute` caches nothing.
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
