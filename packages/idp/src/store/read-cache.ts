import { addBounded } from '@mcp-identity/common';
import type Database from 'better-sqlite3';
import type { Db } from './db.js';

/**
 * What tells whether a database may have changed since a value was read from it: SQLite's
 * `data_version` changes when another connection (another process, such as `idp keys rotate`)
 * commits (https://sqlite.org/pragma.html#pragma_data_version), and `total_changes()` counts
 * every row this connection inserted, updated or deleted, triggers and rolled-back writes
 * included (https://sqlite.org/c3ref/total_changes.html).
 */
class ChangeWatch {
  private readonly dataVersion: Database.Statement;
  private readonly totalChanges: Database.Statement;
  private turnVersion: number | undefined;

  constructor(db: Db) {
    this.dataVersion = db.prepare('PRAGMA data_version').pluck();
    this.totalChanges = db.prepare('SELECT total_changes()').pluck();
  }

  /**
   * `data_version` opens a read transaction, which costs as much as a small query, so it is
   * read once per turn of the event loop: a commit by another connection is seen from the next
   * turn on, as if it had landed just after this one. This connection's writes are counted on
   * every call (`total_changes()` reads no table).
   */
  version(): number {
    if (this.turnVersion === undefined) {
      this.turnVersion = this.dataVersion.get() as number;
      setImmediate(() => {
        this.turnVersion = undefined;
      });
    }
    return this.turnVersion;
  }

  stamp(): [dataVersion: number, totalChanges: number] {
    return [this.version(), this.totalChanges.get() as number];
  }
}

const watches = new WeakMap<Db, ChangeWatch>();

function watchOf(db: Db): ChangeWatch {
  let watch = watches.get(db);
  if (!watch) {
    watch = new ChangeWatch(db);
    watches.set(db, watch);
  }
  return watch;
}

/**
 * Values derived from database rows, each kept only while no write could have changed those
 * rows: any write (by this connection or a commit by another) drops every entry. Nothing is
 * kept from inside a transaction, whose writes may still be rolled back. Bounded: the oldest
 * entry goes first.
 *
 * `ownWrites: false`: only commits by other connections drop the entries; the owner calls
 * `clear` on those of its own writes that can change them (so that unrelated writes on this
 * connection, such as issuing tokens, keep them).
 */
export class ReadCache<K, V> {
  private readonly entries = new Map<K, V>();
  private readonly watch: ChangeWatch;
  private dataVersion = -1;
  private totalChanges = -1;

  constructor(
    private readonly db: Db,
    private readonly maxEntries = 1024,
    private readonly ownWrites = true,
  ) {
    this.watch = watchOf(db);
  }

  clear(): void {
    this.entries.clear();
  }

  get(key: K, load: () => V): V {
    if (this.db.inTransaction) return load();
    const [dataVersion, totalChanges] = this.ownWrites
      ? this.watch.stamp()
      : [this.watch.version(), this.totalChanges];
    if (dataVersion !== this.dataVersion || totalChanges !== this.totalChanges) {
      this.entries.clear();
      this.dataVersion = dataVersion;
      this.totalChanges = totalChanges;
    }
    if (this.entries.has(key)) return this.entries.get(key) as V;
    const value = load();
    addBounded(this.entries, key, value, this.maxEntries);
    return value;
  }
}
