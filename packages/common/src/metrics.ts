import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onRequestAsyncHookHandler,
} from 'fastify';
import { type Counter, collectDefaultMetrics, type Histogram, Registry } from 'prom-client';
import { InvalidArgumentError } from './errors.js';

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
 * What an answer came to, from its status: `success` (the status the route answers when it
 * does its job), `throttled` (429), `refused` (any other 4xx) or `error`.
 */
export function outcomeOfStatus(status: number, success: number): string {
  if (status === success) return 'success';
  if (status === 429) return 'throttled';
  return status >= 400 && status < 500 ? 'refused' : 'error';
}

/**
 * The `grant_type` of a token request as a label: one of `counted`, else `other`, so a client
 * cannot grow the series with made-up values.
 */
export function grantTypeLabel(request: FastifyRequest, counted: ReadonlySet<string>): string {
  const grantType = formField(request.body, 'grant_type');
  return grantType !== undefined && counted.has(grantType) ? grantType : 'other';
}

/** One field of a form body, whether a parser made it an object or it is still text. */
function formField(body: unknown, name: string): string | undefined {
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

/** A `CountingCounter` registered in `registry`, its series kept by labelChildren. */
export function counterChildren<T extends string>(
  registry: Registry,
  configuration: { name: string; help: string; labelNames: readonly T[] },
): (...values: string[]) => CounterSeries {
  return labelChildren(new CountingCounter({ ...configuration, registry }));
}

/**
 * A counter of some of an app's answers: `count` gives the label values (in `labelNames` order)
 * of an answered request, or undefined for a request it does not count.
 */
export interface AnswerCounter {
  name: string;
  help: string;
  labelNames: readonly string[];
  count(request: FastifyRequest, reply: FastifyReply, route: string): readonly string[] | undefined;
}

/**
 * Counts `app`'s answers into `counters` (each a `counterChildren` in `registry`) once each
 * response is sent, so that no route's code changes; `route` is the matched pattern
 * (`routeLabel`), never the raw URL.
 */
export function countAnswers(
  app: FastifyInstance,
  registry: Registry,
  counters: readonly AnswerCounter[],
): void {
  const families = counters.map(({ name, help, labelNames, count }) => ({
    count,
    series: counterChildren(registry, { name, help, labelNames }),
  }));
  // A callback hook, not an async one: no promise per request for a few counter increments.
  app.addHook('onResponse', (request, reply, done) => {
    const route = routeLabel(request);
    for (const family of families) {
      const values = family.count(request, reply, route);
      if (values !== undefined) family.series(...values).inc();
    }
    done();
  });
}

/** What prom-client's registry reads from a counter or a histogram when it is scraped. */
type CounterSnapshot = Awaited<ReturnType<Counter<string>['get']>>;
type HistogramSnapshot = Awaited<ReturnType<Histogram<string>['get']>>;

/** A sample of a scraped metric, as prom-client's registry reads it. */
type Sample = { labels: Record<string, string | number>; value: number; metricName?: string };

/**
 * What the counting metrics share: series found by their label values in plain numbers, and a
 * registration in a prom-client registry, which reads any metric through `name`, `type`, `get`
 * and `reset`, scrapes it and aggregates it across cluster workers (by sum) as one of its own.
 */
abstract class CountingMetric<S> {
  abstract readonly type: 'counter' | 'histogram';
  readonly aggregator = 'sum';
  readonly name: string;
  readonly help: string;
  private readonly labelNames: readonly string[];
  /** Every series, by its label values joined. */
  private readonly series = new Map<string, S>();

  constructor(
    options: { name: string; help: string; labelNames: readonly string[]; registry: Registry },
    private readonly makeSeries: (labels: Record<string, string>) => S,
  ) {
    this.name = options.name;
    this.help = options.help;
    this.labelNames = options.labelNames;
    options.registry.registerMetric(this as unknown as Counter<string>);
  }

  /**
   * The series of these label values, in `labelNames` order (made on first use). Keep it
   * (`labelChildren`) on a hot path: finding it joins the values.
   */
  labels(...values: string[]): S {
    const key = values.join('\u0000');
    let series = this.series.get(key);
    if (series === undefined) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((name, i) => {
        labels[name] = values[i] ?? '';
      });
      series = this.makeSeries(labels);
      this.series.set(key, series);
    }
    return series;
  }

  protected allSeries(): IterableIterator<S> {
    return this.series.values();
  }

  /** The scrape of these samples (prom-client's types also name a `collect`, never returned). */
  protected snapshot<R>(values: Sample[]): R {
    const { name, help, type, aggregator } = this;
    return { name, help, type, aggregator, values } as unknown as R;
  }
}

/** One series of a `CountingCounter`: its label values and its count, a plain number. */
export class CounterSeries {
  value = 0;

  constructor(readonly labels: Readonly<Record<string, string>>) {}

  /** Adds `amount` (1 by default); prom-client's counters refuse a negative one, and so does this. */
  inc(amount = 1): void {
    if (!(amount >= 0)) throw new InvalidArgumentError(`counters only go up: cannot add ${amount}`);
    this.value += amount;
  }
}

/**
 * A counter for hot paths, scraped, aggregated and written exactly as a prom-client `Counter` of
 * the same name, help and labels whose series were made with `labels(...)` (a series is written
 * from its first use on, at 0 until counted). prom-client's `inc`, even on a label child, checks
 * and hashes the label values again on every call.
 */
export class CountingCounter<T extends string> extends CountingMetric<CounterSeries> {
  readonly type = 'counter';

  constructor(options: {
    name: string;
    help: string;
    labelNames: readonly T[];
    registry: Registry;
  }) {
    super(options, (labels) => new CounterSeries(labels));
  }

  async get(): Promise<CounterSnapshot> {
    const values: Sample[] = [];
    for (const series of this.allSeries()) {
      values.push({ labels: { ...series.labels }, value: series.value });
    }
    return this.snapshot<CounterSnapshot>(values);
  }

  /** Sets every count back to 0 (what `Registry.resetMetrics` asks of a metric). */
  reset(): void {
    for (const series of this.allSeries()) series.value = 0;
  }
}

/**
 * One series of a `CountingHistogram`: its label values and its observations, counted in plain
 * numbers.
 */
export class HistogramSeries {
  /** Observations at or below each bound and above the one before (not cumulative). */
  readonly counts: number[];
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Readonly<Record<string, string>>,
    private readonly upperBounds: readonly number[],
  ) {
    this.counts = upperBounds.map(() => 0);
  }

  /** Counts one value (a value that is not a finite number is left out). */
  observe(value: number): void {
    if (!Number.isFinite(value)) return;
    const bounds = this.upperBounds;
    let bucket = 0;
    while (bucket < bounds.length && value > (bounds[bucket] as number)) bucket++;
    if (bucket < bounds.length) this.counts[bucket] = (this.counts[bucket] as number) + 1;
    this.sum += value;
    this.count += 1;
  }
}

/**
 * A histogram for hot paths, scraped, aggregated and written exactly as a prom-client `Histogram`
 * of the same name, help, labels and buckets. prom-client's `observe`, even on a label child,
 * checks and joins the label values again and looks its bucket up by a number turned into a
 * property name on every call, which costs more than the rest of a proxied request's
 * bookkeeping.
 */
export class CountingHistogram<T extends string> extends CountingMetric<HistogramSeries> {
  readonly type = 'histogram';
  private readonly upperBounds: readonly number[];

  constructor(options: {
    name: string;
    help: string;
    labelNames: readonly T[];
    buckets: readonly number[];
    registry: Registry;
  }) {
    const upperBounds = [...options.buckets].sort((a, b) => a - b);
    super(options, (labels) => new HistogramSeries(labels, upperBounds));
    this.upperBounds = upperBounds;
  }

  async get(): Promise<HistogramSnapshot> {
    const values: Sample[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const series of this.allSeries()) {
      if (series.count === 0) continue;
      let cumulative = 0;
      // As prom-client writes them: `le` first, then the series' own labels.
      this.upperBounds.forEach((le, i) => {
        cumulative += series.counts[i] as number;
        values.push({
          labels: { le, ...series.labels },
          value: cumulative,
          metricName: bucketName,
        });
      });
      values.push(
        { labels: { le: '+Inf', ...series.labels }, value: series.count, metricName: bucketName },
        { labels: { ...series.labels }, value: series.sum, metricName: `${this.name}_sum` },
        { labels: { ...series.labels }, value: series.count, metricName: `${this.name}_count` },
      );
    }
    return this.snapshot<HistogramSnapshot>(values);
  }

  /** Forgets every observation (what `Registry.resetMetrics` asks of a metric). */
  reset(): void {
    for (const series of this.allSeries()) {
      series.counts.fill(0);
      series.sum = 0;
      series.count = 0;
    }
  }
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
    new CountingHistogram({
      name: `${prefix}_http_request_duration_seconds`,
      help: 'Time from request to response sent, by method and route pattern.',
      labelNames: ['method', 'route'] as const,
      buckets: DURATION_BUCKETS,
      registry,
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
