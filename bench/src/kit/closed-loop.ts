import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';

/**
 * An in-process closed-loop client for slow, stateful-looking calls (tool calls, token requests):
 * `concurrency` callers on one keep-alive pool, each sending its next request when the previous
 * answer has been read and checked. Unlike wrk it can check every answer and read its headers.
 */
export interface Call {
  path: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string | (() => string);
  /** Throws when the answer is not the expected one (a benchmark of errors measures nothing). */
  check(status: number, body: string): void;
}

export interface LoopResult {
  calls: number;
  callsPerSecond: number;
  meanMs: number;
  p50Ms: number;
  p99Ms: number;
  /** Mean `dur` per metric of the answers' Server-Timing headers (RFC: W3C Server Timing). */
  serverTiming: Map<string, number>;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

function recordServerTiming(header: string | string[] | undefined, into: Map<string, number[]>) {
  for (const entry of [header ?? []].flat().join(',').split(',')) {
    const [name, ...params] = entry.trim().split(';');
    const duration = params.map((p) => /^\s*dur=([\d.]+)/.exec(p)?.[1]).find(Boolean);
    if (!name || duration === undefined) continue;
    const values = into.get(name) ?? [];
    values.push(Number(duration));
    into.set(name, values);
  }
}

export async function closedLoop(
  origin: string,
  tls: { ca?: string },
  call: Call,
  options: { concurrency: number; seconds: number },
): Promise<LoopResult> {
  const pool = new Pool(origin, {
    connections: options.concurrency,
    pipelining: 1,
    ...(tls.ca ? { connect: { ca: tls.ca } } : {}),
  });
  const latencies: number[] = [];
  const timings = new Map<string, number[]>();
  const started = performance.now();
  const deadline = started + options.seconds * 1000;
  try {
    await Promise.all(
      Array.from({ length: options.concurrency }, async () => {
        while (performance.now() < deadline) {
          const begin = performance.now();
          const response = await pool.request({
            path: call.path,
            method: call.method,
            headers: call.headers,
            body: typeof call.body === 'function' ? call.body() : call.body,
          });
          const text = await response.body.text();
          latencies.push(performance.now() - begin);
          call.check(response.statusCode, text);
          recordServerTiming(response.headers['server-timing'], timings);
        }
      }),
    );
  } finally {
    await pool.close();
  }
  const elapsedSeconds = (performance.now() - started) / 1000;
  const sorted = [...latencies].sort((a, b) => a - b);
  const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;
  return {
    calls: latencies.length,
    callsPerSecond: latencies.length / elapsedSeconds,
    meanMs: mean(latencies),
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    serverTiming: new Map([...timings].map(([name, values]) => [name, mean(values)])),
  };
}
