import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { UpstreamConnections } from '../src/data-plane/forwarding.js';
import { LIST_WORKING_COPIES, readList, SseListFilter } from '../src/data-plane/list-filter.js';
import { ByteBudget, Reservation } from '../src/data-plane/request.js';
import {
  ExchangeFailure,
  failureOf,
  unansweredFailure,
} from '../src/data-plane/upstream-failure.js';

const KiB = 1024;

describe('ByteBudget and Reservation', () => {
  it('lends bytes up to the cap, refuses beyond it without taking any, and takes them back', () => {
    const budget = new ByteBudget(100);
    const a = new Reservation(budget);
    const b = new Reservation(budget);
    expect(a.resize(60)).toBe(true);
    expect(b.resize(50)).toBe(false);
    expect(b.bytes).toBe(0);
    expect(budget.usedBytes).toBe(60);
    expect(b.resize(40)).toBe(true);
    expect(a.resize(70)).toBe(false);
    expect(a.resize(10)).toBe(true);
    expect(budget.usedBytes).toBe(50);
    a.release();
    b.release();
    b.release();
    expect(budget.usedBytes).toBe(0);
  });
});

describe('readList', () => {
  const chunks = (count: number, size: number) =>
    Readable.from(Array.from({ length: count }, () => Buffer.alloc(size, 0x20)));

  it('holds every byte it keeps, times the working copies', async () => {
    const budget = new ByteBudget(1024 * KiB);
    const held = new Reservation(budget);
    const body = await readList(chunks(10, 16 * KiB), held);
    expect(body.length).toBe(160 * KiB);
    expect(budget.usedBytes).toBe(160 * KiB * LIST_WORKING_COPIES);
  });

  it('stops at the budget (answer_budget) and at 16 MiB (unfilterable)', async () => {
    const held = new Reservation(new ByteBudget(100 * KiB));
    await expect(readList(chunks(10, 16 * KiB), held)).rejects.toMatchObject({
      failure: 'answer_budget',
    });
    const roomy = new Reservation(new ByteBudget(Number.MAX_SAFE_INTEGER));
    await expect(readList(chunks(17, 1024 * KiB), roomy)).rejects.toMatchObject({
      failure: 'unfilterable',
    });
  });
});

describe('SseListFilter with a reservation', () => {
  const event = (i: number) =>
    `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":${i}}}\n\n`;

  it('holds what the parser may hold, not the whole stream', async () => {
    const budget = new ByteBudget(64 * KiB);
    const held = new Reservation(budget);
    let most = 0;
    const stream = Readable.from(
      (function* () {
        for (let i = 0; i < 5_000; i++) {
          most = Math.max(most, budget.usedBytes);
          yield Buffer.from(event(i));
        }
      })(),
    );
    let out = '';
    await pipeline(
      stream,
      new SseListFilter({ key: 'tools', keep: () => true, privateScope: false }, held),
      async (source) => {
        for await (const chunk of source) out += chunk;
      },
    );
    // 5,000 events of ~100 bytes went through a budget of 64 KiB.
    expect(out.split('\n\n').length - 1).toBe(5_000);
    expect(most).toBeLessThanOrEqual(Buffer.byteLength(event(4_999)) * LIST_WORKING_COPIES);
  });

  it('fails the stream (answer_budget) when one event would exceed the budget', async () => {
    const held = new Reservation(new ByteBudget(64 * KiB));
    const huge = `data: ${'x'.repeat(64 * KiB)}\n\n`;
    const stream = Readable.from(
      Array.from({ length: huge.length / KiB + 1 }, (_, i) =>
        Buffer.from(huge.slice(i * KiB, (i + 1) * KiB)),
      ),
    );
    await expect(
      pipeline(
        stream,
        new SseListFilter({ key: 'tools', keep: () => true, privateScope: false }, held),
        async (source) => {
          for await (const _ of source);
        },
      ),
    ).rejects.toMatchObject({ failure: 'answer_budget' });
  });
});

describe('UpstreamConnections', () => {
  const limits = { connections: 1, queueLength: 2, queueTimeoutMs: 60_000, idleTimeoutMs: 1_000 };

  it('still sends the requests queued when it closes, then closes its pool', async () => {
    const upstream = new UpstreamConnections('http://127.0.0.1:1', limits);
    const started: number[] = [];
    const waiting = (n: number) => ({ start: () => started.push(n), expire: () => undefined });
    expect(upstream.acquire()).toBe(true);
    expect(upstream.acquire()).toBe(false);
    expect(upstream.enqueue(waiting(1))).toBeTypeOf('function');
    expect(upstream.enqueue(waiting(2))).toBeTypeOf('function');
    expect(upstream.enqueue(waiting(3))).toBeUndefined();
    let closed = false;
    const closing = upstream.close().then(() => {
      closed = true;
    });
    // Nothing new is queued once closing.
    upstream.release();
    expect(upstream.enqueue(waiting(4))).toBeUndefined();
    expect(started).toEqual([1]);
    await Promise.resolve();
    expect(closed).toBe(false);
    upstream.release();
    expect(started).toEqual([1, 2]);
    await closing;
    expect(closed).toBe(true);
    expect(upstream.pool.closed).toBe(true);
  });

  it('refuses a waiter whose time ran out, oldest first, and gives its place back', async () => {
    const upstream = new UpstreamConnections('http://127.0.0.1:1', {
      ...limits,
      queueTimeoutMs: 5,
    });
    expect(upstream.retryAfterSeconds).toBe('1');
    upstream.acquire();
    const expired: number[] = [];
    const both = new Promise<void>((resolve) => {
      for (const n of [1, 2]) {
        upstream.enqueue({
          start: () => undefined,
          expire: () => {
            expired.push(n);
            if (expired.length === 2) resolve();
          },
        });
      }
    });
    await both;
    expect(expired).toEqual([1, 2]);
    expect(upstream.queued).toBe(0);
    expect(upstream.inFlight).toBe(1);
    await upstream.destroy();
  });
});

describe('failureOf', () => {
  const withCode = (code: string) => Object.assign(new Error(code), { code });

  it.each([
    ['ECONNREFUSED', 'connect_error'],
    ['UND_ERR_CONNECT_TIMEOUT', 'connect_error'],
    ['DEPTH_ZERO_SELF_SIGNED_CERT', 'connect_error'],
    ['ERR_TLS_CERT_ALTNAME_INVALID', 'connect_error'],
    ['UND_ERR_HEADERS_TIMEOUT', 'timeout'],
    ['UND_ERR_BODY_TIMEOUT', 'timeout'],
    ['UND_ERR_SOCKET', 'connection_lost'],
    ['ECONNRESET', 'connection_lost'],
    ['HPE_INVALID_CONSTANT', 'connection_lost'],
    ['ERR_STREAM_PREMATURE_CLOSE', 'client_closed'],
    ['Z_DATA_ERROR', undefined],
  ])('%s is %s', (code, failure) => {
    expect(failureOf(withCode(code))).toBe(failure);
  });

  it('takes an ExchangeFailure at its word, and calls an unknown unanswered failure a lost connection', () => {
    expect(failureOf(new ExchangeFailure('answer_budget', 'x'))).toBe('answer_budget');
    expect(failureOf(new Error('no code'))).toBeUndefined();
    expect(unansweredFailure(new Error('no code'))).toBe('connection_lost');
    expect(unansweredFailure(withCode('ECONNREFUSED'))).toBe('connect_error');
  });
});
