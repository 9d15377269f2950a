import type { FastifyInstance } from 'fastify';
import { afterAll } from 'vitest';
import { type RunningServer, startServer } from '../server.js';

/**
 * Starts `app` on 127.0.0.1 with an ephemeral port, without signal handlers,
 * and closes it after the current test file.
 */
export async function startTestServer(app: FastifyInstance): Promise<RunningServer> {
  const server = await startServer(app, { host: '127.0.0.1', port: 0, handleSignals: false });
  afterAll(() => server.close());
  return server;
}
