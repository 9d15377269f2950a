import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onRequestAsyncHookHandler,
} from 'fastify';
import {
  Counter,
  type CounterConfiguration,
  collectDefaultMetrics,
  Histogram,
  Registry,
} from 'prom-client';
import { bearerToken } from './http-auth.js';
import { constantTimeEqual } from './secrets.js';

export const METRICS_PATH = '/metrics';

/** Request durations, 1 ms … 10 s. */
export const DURATION_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

/**
 * A service's own registry, holding prom-client's Node.js process metrics (CPU, memory, file
 * descriptors, event loop lag, GC, heap). Never prom-client's global registry: services sharing
 * one process (tests, an embedding program) would register the same names twice.
 */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

/** What `/metrics` serves: a registry, or anything rendering the same exposition. */
export interface MetricsSource {
  metrics(): Promise<string>;
  readonly contentType: string;
}

export interface MetricsRouteOptions {
  /** Runs first and may reply to refuse the scrape; without it the route is open. */
  authorize?: onRequestAsyncHookHandler;
}

/** `GET /metrics` in the Prometheus text format, kept out of the request log. */
export function registerMetricsRoute(
  app: FastifyInstance,
  source: MetricsSource,
  options: MetricsRouteOptions = {},
): void {
  app.get(
    METRICS_PATH,
    { logLevel: 'warn', ...(options.authorize ? { onRequest: options.authorize } : {}) },
    async (_request, reply) =>
      reply
        .header('content-type', source.contentType)
        .header('cache-control', 'no-store')
        .send(await source.metrics()),
  );
}

/**
 * Lets a scrape through only with `Authorization: Bearer <token>` (RFC 6750 §2.1), the token a
 * credential that grants nothing but the metrics; compared in constant time.
 */
export function requireMetricsToken(token: string): onRequestAsyncHookHandler {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const presented = bearerToken(request.headers.authorization);
    if (presented !== undefined && constantTimeEqual(presented, token)) return;
    reply
      .code(401)
      .header('www-authenticate', 'Bearer realm="metrics"')
      .send({ error: 'unauthorized', message: 'A metrics token is required' });
    return reply;
  };
}

/**
 * What an answer came to, from its status: `success` (the status the route answers when it
 * does its job), `throttled` (429), `refused` (any other 4xx) or `error`.
 */
export function outcomeOfStatus(status: number, success: number): string {
  if (status === success) return 'success';
  if (status === 429) return 'throttled';
  return status >= 400 && status < 500 ? 'refused' : 'error';
}

/** One field of a form body, whether a parser made it an object or it is still text. */
export function formField(body: unknown, name: string): string | undefined {
  if (typeof body === 'string') return new URLSearchParams(body).get(name) ?? undefined;
  if (typeof body !== 'object' || body === null) return undefined;
  const value = (body as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : undefined;
}

/** The route a request matched, or `unmatched` (label values must stay few). */
export function routeLabel(request: FastifyRequest): string {
  return request.routeOptions.url ?? 'unmatched';
}

type ChildTree<C> = Map<string, ChildTree<C> | C>;

/**
 * A metric's label children kept by their label values: recording into a series that exists
 * finds its child through one map per label, where `metric.labels(...)` would build a new label
 * object and child on every call.
 */
export function labelChildren<C>(metric: {
  labels(...values: string[]): C;
}): (...values: string[]) => C {
  const root: ChildTree<C> = new Map();
  return (...values) => {
    let node = root;
    const last = values.length - 1;
    for (let i = 0; i < last; i++) {
      const value = values[i] as string;
      let next = node.get(value) as ChildTree<C> | undefined;
      if (!next) {
        next = new Map();
        node.set(value, next);
      }
      node = next;
    }
    const leaf = values[last] as string;
    let child = node.get(leaf) as C | undefined;
    if (child === undefined) {
      child = metric.labels(...values);
      node.set(leaf, child);
    }
    return child;
  };
}

/** A counter registered in `registry`, its children kept by labelChildren. */
export function counterChildren<T extends string>(
  registry: Registry,
  configuration: Omit<CounterConfiguration<T>, 'registers'>,
) {
  return labelChildren(new Counter({ ...configuration, registers: [registry] }));
}

/** Records one answered request: its method, route pattern, status and duration in seconds. */
export type HttpRequestRecorder = (
  method: string,
  route: string,
  status: number,
  seconds: number,
) => void;

/**
 * `<prefix>_http_requests_total{method, route, status}` and
 * `<prefix>_http_request_duration_seconds{method, route}`, registered in `registry`; the
 * recorder also serves requests answered before Fastify (`createApp`'s `front`).
 */
export function httpRequestMetrics(registry: Registry, prefix: string): HttpRequestRecorder {
  const requests = counterChildren(registry, {
    name: `${prefix}_http_requests_total`,
    help: 'HTTP requests answered, by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'] as const,
  });
  const duration = labelChildren(
    new Histogram({
      name: `${prefix}_http_request_duration_seconds`,
      help: 'Time from request to response sent, by method and route pattern.',
      labelNames: ['method', 'route'] as const,
      buckets: DURATION_BUCKETS,
      registers: [registry],
    }),
  );
  return (method, route, status, seconds) => {
    requests(method, route, String(status)).inc();
    duration(method, route).observe(seconds);
  };
}

/**
 * Records every request Fastify answers, when its response is sent. Labels are the route
 * pattern the router matched (never the raw URL), so series stay few.
 */
export function recordHttpRequests(app: FastifyInstance, record: HttpRequestRecorder): void {
  app.addHook('onResponse', async (request, reply) => {
    record(request.method, routeLabel(request), reply.statusCode, reply.elapsedTime / 1000);
  });
}

/** `httpRequestMetrics` recorded by `recordHttpRequests`: every route of `app`. */
export function instrumentHttp(app: FastifyInstance, registry: Registry, prefix: string): void {
  recordHttpRequests(app, httpRequestMetrics(registry, prefix));
}
