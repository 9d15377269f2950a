import type { FastifyInstance } from 'fastify';

export interface HealthOptions {
  /** Liveness: answers 200 while the process serves requests. */
  livePath: string;
  /** Readiness: 200 when `ready()` holds, else 503. */
  readyPath?: string;
  liveBody?: Record<string, unknown>;
  ready?: () => Promise<boolean>;
}

/** Unauthenticated health routes, excluded from request logs to keep probes quiet. */
export function registerHealthRoutes(app: FastifyInstance, options: HealthOptions): void {
  const liveBody = options.liveBody ?? { status: 'ok' };
  app.get(options.livePath, { logLevel: 'warn' }, async (_request, reply) =>
    reply.header('cache-control', 'no-store').send(liveBody),
  );
  const readyPath = options.readyPath;
  if (readyPath === undefined) return;
  app.get(readyPath, { logLevel: 'warn' }, async (request, reply) => {
    let ready = true;
    if (options.ready) {
      ready = await options.ready().catch((error: unknown) => {
        request.log.warn({ err: error }, 'readiness check failed');
        return false;
      });
    }
    return reply
      .code(ready ? 200 : 503)
      .header('cache-control', 'no-store')
      .send({ status: ready ? 'ready' : 'not_ready' });
  });
}
