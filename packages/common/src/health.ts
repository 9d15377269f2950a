import type { FastifyInstance } from 'fastify';

export interface HealthOptions {
  /** Liveness: answers 200 while the process serves requests. */
  livePath: string;
}

/** An unauthenticated liveness route, excluded from request logs and traces to keep probes quiet. */
export function registerHealthRoutes(app: FastifyInstance, options: HealthOptions): void {
  app.get(
    options.livePath,
    { logLevel: 'warn', config: { untraced: true } },
    async (_request, reply) => reply.header('cache-control', 'no-store').send({ status: 'ok' }),
  );
}
