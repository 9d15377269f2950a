import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedRateLoad, type LoadClient, pickLoadClient, runLoad } from '../src/kit/load.js';

const wrkInstalled = (await pickLoadClient()) === 'wrk';

const seen: { headers: IncomingHttpHeaders; body: string }[] = [];
const arrivals: { at: number; body: string; authorization: string | undefined }[] = [];
/** Arrival times of the /paced requests, per connection. */
const pacedArrivals = new Map<object, number[]>();
const server = createServer((request, response) => {
  let body = '';
  request.on('data', (chunk: Buffer) => {
    body += chunk.toString();
  });
  request.on('end', () => {
    // Only the requests of the test that sends to /mcp (a previous test's last ones may linger).
    if (request.url === '/mcp' && seen.length < 5) seen.push({ headers: request.headers, body });
    if (request.url === '/paced') {
      const times = pacedArrivals.get(request.socket) ?? [];
      times.push(performance.now());
      pacedArrivals.set(request.socket, times);
    }
    if (request.url === '/fixed-rate') {
      arrivals.push({ at: performance.now(), body, authorization: request.headers.authorization });
    }
    response.writeHead(request.url === '/fail' ? 500 : 200).end('ok');
  });
});
let origin = '';
beforeAll(async () => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

const clients: LoadClient[] = wrkInstalled ? ['autocannon', 'wrk'] : ['autocannon'];

describe.each(clients)('closed-loop load with %s', (client) => {
  it('sends the method, headers and body as given and reports throughput and latency', async () => {
    seen.length = 0;
    // A value that would end a Lua long string early if it were not escaped.
    const awkward = 'Bearer a]]b]=]c';
    const result = await runLoad(client, {
      url: `${origin}/mcp`,
      connections: 2,
      seconds: 1,
      method: 'POST',
      headers: { authorization: awkward, 'content-type': 'application/json' },
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/call"}',
    });
    expect(result.requests).toBeGreaterThan(0);
    expect(result.rps).toBeGreaterThan(0);
    expect(result.p99Ms).toBeGreaterThanOrEqual(result.p50Ms);
    expect(seen[0]?.headers.authorization).toBe(awkward);
    expect(seen[0]?.body).toBe('{"jsonrpc":"2.0","id":1,"method":"tools/call"}');
  });

  it('fails instead of reporting the speed of error answers', async () => {
    await expect(
      runLoad(client, {
        url: `${origin}/fail`,
        connections: 1,
        seconds: 1,
        method: 'GET',
        headers: {},
      }),
    ).rejects.toThrow(/2xx/);
  });
});

describe.runIf(wrkInstalled)('light load with wrk', () => {
  it('paces each connection by random pauses that average the one given', async () => {
    const spec = {
      url: `${origin}/paced`,
      connections: 4,
      seconds: 2,
      method: 'GET' as const,
      headers: {},
    };
    pacedArrivals.clear();
    const paced = await runLoad('wrk', { ...spec, pauseMs: 50 });
    // Four connections waiting 50 ms on average after each answer send about 160 requests in
    // two seconds; unpaced, the same connections send thousands.
    expect(paced.requests).toBeGreaterThan(80);
    expect(paced.requests).toBeLessThan(320);
    const gaps = [...pacedArrivals.values()].flatMap((times) =>
      times.slice(1).map((at, i) => at - (times[i] as number)),
    );
    const mean = gaps.reduce((sum, gap) => sum + gap, 0) / gaps.length;
    expect(mean).toBeGreaterThan(35);
    expect(mean).toBeLessThan(75);
    // Random, not fixed: some gaps are far shorter than the mean and some far longer, so
    // connections that started together do not stay in step.
    expect(gaps.filter((gap) => gap < 25).length).toBeGreaterThan(5);
    expect(gaps.filter((gap) => gap > 75).length).toBeGreaterThan(5);
    expect((await runLoad('wrk', spec)).requests).toBeGreaterThan(500);
  });
});

it('refuses a pause between requests with autocannon, which cannot pace them', async () => {
  await expect(
    runLoad('autocannon', {
      url: `${origin}/paced`,
      connections: 1,
      seconds: 1,
      method: 'GET',
      headers: {},
      pauseMs: 5,
    }),
  ).rejects.toThrow(/needs wrk/);
});

describe('fixed-rate load', () => {
  it('sends rate × seconds POSTs spread over the time, not as fast as answers come', async () => {
    const started = performance.now();
    const sent = await fixedRateLoad({
      url: `${origin}/fixed-rate`,
      rate: 40,
      seconds: 0.5,
      connections: 4,
      headers: { authorization: 'Bearer x' },
      body: '{"id":1}',
    });
    expect(sent).toBe(20);
    expect(arrivals).toHaveLength(20);
    expect(arrivals.every((a) => a.body === '{"id":1}' && a.authorization === 'Bearer x')).toBe(
      true,
    );
    // The 20th request is due 475 ms after the first: a closed loop would be done in a few ms.
    expect((arrivals.at(-1)?.at ?? 0) - started).toBeGreaterThanOrEqual(450);
  });

  it('fails when an answer is not 2xx', async () => {
    await expect(
      fixedRateLoad({
        url: `${origin}/fail`,
        rate: 20,
        seconds: 0.1,
        connections: 1,
        headers: {},
        body: '',
      }),
    ).rejects.toThrow('HTTP 500');
  });
});
