import { createHook } from 'node:async_hooks';

let pinned: object | undefined;

const noop = () => undefined;

/**
 * Keeps one of `process.nextTick`'s queue entries alive for the life of the process, so that
 * every later `nextTick` stays on V8's optimized path. Called once, first thing, by `runMain`.
 *
 * `nextTick` builds each queue entry from an object literal with computed (symbol) keys, and V8
 * holds the hidden classes ("maps") that literal passes through only weakly. A full garbage
 * collection while no entry is queued (typically the memory-reducing collection of a server
 * that has gone idle) frees them; the next entry gets fresh ones; and the literal's inline
 * cache, which takes a freed map for a different one, turns megamorphic for good. From then on
 * every `nextTick` (Node's streams and HTTP make several per request) defines its properties
 * through V8's runtime: 4% of the gateway's CPU per proxied request (round 8's figures in
 * bench/README.md's history, `git show ca26675:bench/README.md`). Node 20, 22 and 24 all behave so. An entry that never dies keeps the maps.
 *
 * An async hook's `init` is the one public view of a queue entry (`nextTickQueueEntry`).
 * Returns the pinned entry.
 */
export function pinTickObjectMaps(): object | undefined {
  pinned ??= nextTickQueueEntry();
  return pinned;
}

/** A new queue entry of `process.nextTick`, caught by an async hook enabled for one call. */
export function nextTickQueueEntry(): object | undefined {
  let entry: object | undefined;
  const hook = createHook({
    init(_asyncId, type, _triggerAsyncId, resource) {
      if (type === 'TickObject') entry ??= resource;
    },
  });
  hook.enable();
  try {
    process.nextTick(noop);
  } finally {
    hook.disable();
  }
  return entry;
}
