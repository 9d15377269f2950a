import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedRateLoad } from '../src/kit/instructions.js';

const arrivals: { at: number; body: string; authorization: string | undefined }[] = [];
const server = createServer((request, response) => {
  let body = '';
  request.on('data', (chunk: Buffer) => {
    body += chunk.toString();
  });
  request.on('end', () => {
    if (request.url === '/mcp') {
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

describe('fixed-rate load', () => {
  it('sends rate × seconds POSTs spread over the time, not as fast as answers come', async () => {
    const started = performance.now();
    const sent = await fixedRateLoad({
      url: `${origin}/mcp`,
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
