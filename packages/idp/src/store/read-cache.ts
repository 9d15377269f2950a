import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import type Database from 'better-sqlite3';
import type { Db } from './db.js';

/**
 * Bytes of the first copy of the WAL-index header at the start of `<database>-shm`
 * (https://sqlite.org/walformat.html, "The WAL-Index Header"): every transaction committed by
 * any connection rewrites it (its change counter `iChange` and last valid frame `mxFrame`).
 * The writer updates this copy last, once the commit is complete.
 */
const WAL_INDEX_HEADER_BYTES = 48;

/**
 * What tells whether a database may have changed since a value was read from it: a commit by
 * another connection (another process, such as `idp keys rotate`) changes the WAL-index header,
 * read with one `pread` of the shared-memory file (SQLite's `PRAGMA data_version` tells the
 * same, https://sqlite.org/pragma.html#pragma_data_version, but opens a read transaction, which
 * costs several times more); a database without one (in memory) asks `data_version`.
 * `total_changes()` counts every row this connection inserted, updated or deleted, triggers
 * and rolled-back writes included (https://sqlite.org/c3ref/total_changes.html).
 */
class ChangeWatch {
  private readonly dataVersion: Database.Statement;
  private readonly totalChanges: Database.Statement;
  private readonly header: { fd: number; seen: Buffer; read: Buffer } | undefined;
  private headerVersion = 0;
  private turnVersion: number | undefined;

  constructor(db: Db) {
    this.dataVersion = db.prepare('PRAGMA data_version').pluck();
    this.totalChanges = db.prepare('SELECT total_changes()').pluck();
    const shm = `${db.name}-shm`;
    if (!db.memory && existsSync(shm)) {
      this.header = {
        fd: openSync(shm, 'r'),
        seen: Buffer.alloc(WAL_INDEX_HEADER_BYTES),
        read: Buffer.alloc(WAL_INDEX_HEADER_BYTES),
      };
    }
  }

  /**
   * Read once per turn of the event loop: a commit by another connection is seen from the next
   * turn on, as if it had landed just after this one. This connection's writes are counted on
   * every call (`total_changes()` reads no table).
   */
  version(): number {
    if (this.turnVersion === undefined) {
      this.turnVersion = this.header ? this.readHeader(this.header) : this.readDataVersion();
      setImmediate(() => {
        this.turnVersion = undefined;
      });
    }
    return this.turnVersion;
  }

  stamp(): [dataVersion: number, totalChanges: number] {
    return [this.version(), this.totalChanges.get() as number];
  }

  close(): void {
    if (this.header) closeSync(this.header.fd);
  }

  private readDataVersion(): number {
    return this.dataVersion.get() as number;
  }

  /** A number that moves whenever the header differs from the last one read. */
  private readHeader(header: { fd: number; seen: Buffer; read: Buffer }): number {
    const bytes = readSync(header.fd, header.read, 0, WAL_INDEX_HEADER_BYTES, 0);
    // A short read (a file being set up again) tells nothing: taken as a change.
    if (bytes < WAL_INDEX_HEADER_BYTES) header.read.fill(0, bytes);
    if (bytes < WAL_INDEX_HEADER_BYTES || !header.read.equals(header.seen)) {
      header.read.copy(header.seen);
      this.headerVersion++;
    }
    return this.headerVersion;
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

/** Releases what the read caches of `db` hold open; called as the database is closed. */
export function stopWatching(db: Db): void {
  watches.get(db)?.close();
  watches.delete(db);
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
    if (this.entries.size >= this.maxEntries) {
      this.entries.delete(this.entries.keys().next().value as K);
    }
    this.entries.set(key, value);
    return value;
  }
}
