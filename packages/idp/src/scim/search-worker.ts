import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { InternalError } from '@mcp-identity/common';

/** What the worker answers: the match count and, in id order (or `ordered`'s), the ids asked for. */
export type IdsAnswer = { total: number; ids: string[] };

type Pending = { resolve(answer: IdsAnswer): void; reject(error: Error): void };

// The worker runs plain JavaScript (it must also run when this package is loaded from its
// TypeScript sources): it only executes the SQL the main thread compiled, on its own read-only
// connection. Its count cache is reset whenever SQLite's `data_version` says another connection
// (the server's) committed.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { readonly: true, fileMustExist: true });
db.pragma('busy_timeout = 5000');
// The main thread's FOLD_FUNCTION (sort.ts): sorts fold case as JavaScript does.
db.function('scim_fold', { deterministic: true }, (v) => (typeof v === 'string' ? v.toLowerCase() : v));
const statements = new Map();
const counts = new Map();
let version = -1;
const prepared = (sql) => {
  let statement = statements.get(sql);
  if (!statement) {
    statement = db.prepare(sql);
    if (statements.size >= 256) statements.delete(statements.keys().next().value);
    statements.set(sql, statement);
  }
  return statement;
};
parentPort.on('message', ({ id, sql, params, page, ordered }) => {
  try {
    const current = prepared('PRAGMA data_version').pluck().get();
    if (current !== version) {
      counts.clear();
      version = current;
    }
    const key = sql + '\\u0000' + JSON.stringify(params);
    let total = counts.get(key);
    if (total === undefined) {
      total = prepared('SELECT count(*) FROM (' + sql + ')').pluck().get(...params);
      if (counts.size >= 128) counts.delete(counts.keys().next().value);
      counts.set(key, total);
    }
    const list = ordered ? ordered.sql : 'SELECT user_id FROM (' + sql + ') ORDER BY user_id';
    const listParams = ordered ? ordered.params : params;
    let ids = [];
    if (!page) {
      ids = prepared(list).pluck().all(...listParams);
    } else if (page.count > 0 && total >= page.startIndex) {
      ids = prepared(list + ' LIMIT ? OFFSET ?')
        .pluck()
        .all(...listParams, page.count, page.startIndex - 1);
    }
    parentPort.postMessage({ id, total, ids });
  } catch (error) {
    parentPort.postMessage({ id, error: String(error && error.message) });
  }
});
`;

const IDLE_MS = 10_000;

/**
 * Runs a search's SQL (count and ids) on a worker thread, so that a broad or expensive filter
 * never holds the event loop that serves tokens and other requests. One worker per database,
 * started on first use and stopped after a quiet period.
 */
export class SearchWorker {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private idle: NodeJS.Timeout | undefined;

  constructor(private readonly file: string) {}

  /**
   * Count and ids of `sql` (selecting `user_id`): one page when `page` is given, else all; in
   * id order, or in the order of `ordered` (the same ids, sorted).
   */
  run(
    sql: string,
    params: readonly unknown[],
    page?: { startIndex: number; count: number },
    ordered?: { sql: string; params: readonly unknown[] },
  ): Promise<IdsAnswer> {
    const worker = this.start();
    const id = this.nextId++;
    clearTimeout(this.idle);
    return new Promise<IdsAnswer>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, sql, params, page, ordered });
    });
  }

  stop(): void {
    clearTimeout(this.idle);
    const worker = this.worker;
    this.worker = undefined;
    void worker?.terminate();
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { driver, file: this.file },
    });
    worker.unref();
    worker.on('message', (message: IdsAnswer & { id: number; error?: string }) => {
      const pending = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.error !== undefined) pending?.reject(new InternalError(message.error));
      else pending?.resolve({ total: message.total, ids: message.ids });
      if (this.pending.size === 0) {
        this.idle = setTimeout(() => this.stop(), IDLE_MS);
        this.idle.unref();
      }
    });
    // A worker stopped on purpose had nothing pending; one that failed takes its requests along.
    const fail = (error: Error) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      for (const pending of this.pending.values()) pending.reject(error);
      this.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', () => fail(new InternalError('The search worker stopped.')));
    this.worker = worker;
    return worker;
  }
}
