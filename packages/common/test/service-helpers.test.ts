import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  describeRequiring,
  nginxMissing,
  postgresBinDir,
  postgresMissing,
  redisMissing,
  startLoadBalancer,
  startPostgres,
  startRedis,
} from '@mcp-identity/common/testing';
import { afterAll, expect, it } from 'vitest';

const run = promisify(execFile);

async function psql(url: string, sql: string): Promise<string> {
  const { stdout } = await run(join(postgresBinDir() as string, 'psql'), [url, '-Atqc', sql]);
  return stdout.trim();
}

/** One raw RESP command over TCP; returns the first reply line. */
function redisCommand(port: number, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(`${command}\r\n`));
    socket.once('data', (data) => {
      resolve(data.toString('utf8').split('\r\n')[0] as string);
      socket.end();
    });
    socket.once('error', reject);
  });
}

describeRequiring('throwaway PostgreSQL', postgresMissing(), () => {
  it('runs a private cluster that can be stopped and started again with its data', async () => {
    const postgres = await startPostgres();
    try {
      const url = postgres.createDatabase('helper_check');
      await psql(url, 'CREATE TABLE t (v text); INSERT INTO t VALUES ($$kept$$)');
      await postgres.stop();
      await expect(psql(url, 'SELECT 1')).rejects.toThrow();
      await postgres.start();
      expect(await psql(url, 'SELECT v FROM t')).toBe('kept');
      expect(await psql(postgres.url, 'SELECT current_setting($$port$$)')).toBe(
        String(postgres.port),
      );
    } finally {
      await postgres.close();
    }
    await expect(psql(postgres.url, 'SELECT 1')).rejects.toThrow();
  });
});

describeRequiring('throwaway Redis', redisMissing(), () => {
  it('answers on its own port until stopped, and restarts empty', async () => {
    const redis = await startRedis();
    try {
      expect(await redisCommand(redis.port, 'SET k v')).toBe('+OK');
      expect(await redisCommand(redis.port, 'GET k')).toBe('$1');
      await redis.stop();
      await expect(redisCommand(redis.port, 'PING')).rejects.toThrow();
      await redis.start();
      expect(await redisCommand(redis.port, 'GET k')).toBe('$-1');
    } finally {
      await redis.close();
    }
  });
});

describeRequiring('nginx load balancer', nginxMissing(), () => {
  const backends: Server[] = [];
  afterAll(() => Promise.all(backends.map((b) => new Promise((r) => b.close(r)))));

  async function backend(name: string): Promise<string> {
    const server = createServer((_request, response) => response.end(name));
    backends.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address() as { port: number };
    return `127.0.0.1:${address.port}`;
  }

  it('spreads requests over every backend and skips one that is gone', async () => {
    const a = await backend('a');
    const b = await backend('b');
    const lb = await startLoadBalancer({ backends: [a, b] });
    try {
      const seen = new Set<string>();
      for (let i = 0; i < 6; i += 1) seen.add(await (await fetch(lb.url)).text());
      expect([...seen].sort()).toEqual(['a', 'b']);
      backends[0]?.closeAllConnections();
      await new Promise((resolve) => backends[0]?.close(resolve));
      for (let i = 0; i < 4; i += 1) {
        const response = await fetch(lb.url);
        expect(response.status).toBe(200);
        expect(await response.text()).toBe('b');
      }
    } finally {
      await lb.close();
    }
  });
});
