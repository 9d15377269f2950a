import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { Pool } from 'undici';
import { autocannon } from './autocannon.js';

/**
 * Closed-loop HTTP load (keep-alive connections, each sending its next request when the previous
 * answer arrived) with wrk when it is installed (`apt-get install wrk`: a C client that leaves
 * more of the CPU to the servers under test), else autocannon; and open-loop load at a fixed
 * rate (`fixedRateLoad`), for counting instructions (`instructions.ts`).
 */

export type LoadClient = 'wrk' | 'autocannon';

export interface LoadSpec {
  url: string;
  connections: number;
  seconds: number;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  /** wrk threads (default 1: the servers under test need the other cores). */
  threads?: number;
  /**
   * After each answer a connection waits a random whole number of milliseconds between 0 and
   * twice this, this on average (wrk only): a light load under which latency is the path's own
   * rather than time spent queued. A fixed pause would keep connections that started together
   * in step, so each round of requests would arrive as one burst and queue behind itself.
   */
  pauseMs?: number;
}

export interface LoadResult {
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
}

const run = promisify(execFile);

async function wrkInstalled(): Promise<boolean> {
  try {
    await run('wrk', ['--version']);
    return true;
  } catch (error) {
    // wrk prints its version and usage, then exits 1: it is installed.
    return (error as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

/** The requested client, or wrk when installed, or autocannon. */
export async function pickLoadClient(requested?: string): Promise<LoadClient> {
  if (requested === 'autocannon') return 'autocannon';
  const hasWrk = await wrkInstalled();
  if (requested === 'wrk' && !hasWrk) throw new Error('wrk is not installed (apt-get install wrk)');
  if (requested !== undefined && requested !== 'wrk') {
    throw new Error(`unknown load client ${requested}: use wrk or autocannon`);
  }
  return hasWrk ? 'wrk' : 'autocannon';
}

export function runLoad(client: LoadClient, spec: LoadSpec): Promise<LoadResult> {
  return client === 'wrk' ? runWrk(spec) : runAutocannon(spec);
}

/** A Lua long string that cannot be closed early by its content. */
function luaString(value: string): string {
  let level = '';
  while (value.includes(`]${level}]`)) level += '=';
  return `[${level}[${value}]${level}]`;
}

async function runWrk(spec: LoadSpec): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-wrk-'));
  // Also removed when the benchmark exits mid-run (Ctrl-C).
  const removeDir = () => rmSync(dir, { recursive: true, force: true });
  process.once('exit', removeDir);
  try {
    const script = join(dir, 'request.lua');
    const headers = Object.entries(spec.headers)
      .map(([name, value]) => `wrk.headers[ ${luaString(name)} ] = ${luaString(value)}`)
      .join('\n');
    writeFileSync(
      script,
      `wrk.method = "${spec.method}"
${spec.body === undefined ? '' : `wrk.body = ${luaString(spec.body)}`}
${headers}
${spec.pauseMs === undefined ? '' : `delay = function() return math.random(0, ${2 * spec.pauseMs}) end`}
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("BENCH-RESULT %d %d %.1f %.1f %d %d %d %d %d\\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.status, e.connect, e.read, e.write, e.timeout))
end
`,
    );
    const threads = Math.min(spec.threads ?? 1, spec.connections);
    const { stdout } = await run(
      'wrk',
      [
        `-t${threads}`,
        `-c${spec.connections}`,
        `-d${spec.seconds}s`,
        '--timeout',
        '10s',
        '-s',
        script,
        spec.url,
      ],
      { maxBuffer: 1 << 20 },
    );
    const line = stdout.split('\n').find((l) => l.startsWith('BENCH-RESULT '));
    if (!line) throw new Error(`wrk printed no result:\n${stdout}`);
    const [requests, durationUs, p50Us, p99Us, status, connect, read, write, timeout] = line
      .split(' ')
      .slice(1)
      .map(Number) as [number, number, number, number, number, number, number, number, number];
    if (status > 0) throw new Error(`${spec.url}: ${status} responses were not 2xx/3xx`);
    const socketErrors = connect + read + write + timeout;
    if (socketErrors > 0) {
      throw new Error(
        `${spec.url}: socket errors (connect ${connect}, read ${read}, write ${write}, timeout ${timeout})`,
      );
    }
    return {
      requests,
      rps: requests / (durationUs / 1e6),
      p50Ms: p50Us / 1000,
      p99Ms: p99Us / 1000,
    };
  } finally {
    process.off('exit', removeDir);
    removeDir();
  }
}

async function runAutocannon(spec: LoadSpec): Promise<LoadResult> {
  if (spec.pauseMs !== undefined) throw new Error('a pause between requests needs wrk');
  const result = await autocannon({
    url: spec.url,
    method: spec.method,
    connections: spec.connections,
    duration: spec.seconds,
    headers: spec.headers,
    ...(spec.body === undefined ? {} : { body: spec.body }),
  });
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${spec.url}: ${result.non2xx} non-2xx responses, ${result.errors} errors`);
  }
  return {
    requests: result.requests.total,
    rps: result.requests.total / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
  };
}

/**
 * Sends `rate` requests per second for `seconds` on a keep-alive pool of `connections`, whatever
 * the answers' pace (open loop), and resolves with the number answered 2xx (anything else
 * throws). Counted instructions include work that scales with time rather than requests (event
 * loop wake-ups, timers), and a closed-loop client's pace under callgrind follows the machine's
 * load; at a fixed rate every build is counted over the same traffic.
 */
export async function fixedRateLoad(spec: {
  url: string;
  rate: number;
  seconds: number;
  connections: number;
  headers: Record<string, string>;
  body: string;
}): Promise<number> {
  const url = new URL(spec.url);
  const pool = new Pool(url.origin, { connections: spec.connections });
  const total = Math.round(spec.rate * spec.seconds);
  const start = performance.now();
  const sent: Promise<void>[] = [];
  let failure: Error | undefined;
  try {
    for (let i = 0; i < total && !failure; i++) {
      const due = start + (i * 1000) / spec.rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      sent.push(
        pool
          .request({
            path: `${url.pathname}${url.search}`,
            method: 'POST',
            headers: spec.headers,
            body: spec.body,
          })
          .then(async (response) => {
            await response.body.dump();
            if (response.statusCode >= 300) throw new Error(`HTTP ${response.statusCode}`);
          })
          .catch((error: Error) => {
            failure ??= error;
          }),
      );
    }
    await Promise.all(sent);
    if (failure) throw new Error(`${spec.url}: ${failure.message}`);
    return total;
  } finally {
    await pool.close();
  }
}
