import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnNodeProxy, TOOL_CALL_BODY, TOOL_RESULT_BODY } from '../src/kit/fast-upstream.js';
import { processTree } from '../src/kit/process-stats.js';

function commandOf(pid: number): string {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
}

describe.runIf(process.platform === 'linux')('the Node.js floor proxy of bench:gateway', () => {
  const upstream = createServer((request, response) => {
    request.resume();
    request.once('end', () => {
      response.writeHead(200, {
        'content-type': 'application/json',
        'x-served-by': `${process.pid}`,
      });
      response.end(TOOL_RESULT_BODY);
    });
  });
  let upstreamUrl = '';

  beforeAll(async () => {
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`;
  });
  afterAll(() => new Promise<void>((resolve) => upstream.close(() => resolve())));

  it('runs as cluster workers on one port, forwards, and stops every worker', async () => {
    const proxy = await spawnNodeProxy(upstreamUrl, 2);
    // tsx's esbuild service is a child too: the workers are the processes running the script.
    const workers = processTree(proxy.pid).filter(
      (pid) => pid !== proxy.pid && commandOf(pid).includes('node-proxy-server'),
    );
    try {
      expect(workers).toHaveLength(2);
      const response = await fetch(proxy.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: TOOL_CALL_BODY,
      });
      expect(response.status).toBe(200);
      expect(await response.text()).toBe(TOOL_RESULT_BODY);
    } finally {
      await proxy.stop();
    }
    for (const pid of workers) expect(existsSync(`/proc/${pid}`)).toBe(false);
  });
});
