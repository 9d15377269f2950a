import {
  CountingCounter,
  CountingHistogram,
  countAnswers,
  counterChildren,
  createApp,
  createLogger,
  DURATION_BUCKETS,
  labelChildren,
} from '@mcp-identity/common';
import { metricValue, startTestServer } from '@mcp-identity/common/testing';
import { AggregatorRegistry, Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';

/** Durations around and on every bound, below the first and above the last. */
const VALUES = [0, 0.0004, 0.001, 0.0011, 0.0025, 0.004, 0.05, 0.3, 1, 2.5, 7, 10, 11, 42];

/** The same observations in a prom-client Histogram and in a CountingHistogram. */
function twins(values: readonly number[]) {
  const options = {
    name: 'demo_duration_seconds',
    help: 'Durations with "quotes" and a back\\slash.',
    labelNames: ['method', 'route'] as const,
    buckets: DURATION_BUCKETS,
  };
  const reference = new Registry();
  const histogram = new Histogram({ ...options, registers: [reference] });
  const counted = new Registry();
  const counting = new CountingHistogram({ ...options, registry: counted });
  const series = labelChildren(counting);
  const labels = [
    ['GET', '/a'],
    ['POST', '/b "q"\n'],
  ] as const;
  values.forEach((value, i) => {
    const [method, route] = labels[i % labels.length] as readonly [string, string];
    histogram.labels(method, route).observe(value);
    series(method, route).observe(value);
  });
  return { reference, counted, counting, series };
}

/** What a cluster primary writes for these workers' registries (prom-client's aggregation). */
async function clusterTotal(
  workers: readonly Record<'reference' | 'counted', Registry>[],
  which: 'reference' | 'counted',
): Promise<string> {
  const snapshots = await Promise.all(workers.map((worker) => worker[which].getMetricsAsJSON()));
  return AggregatorRegistry.aggregate(snapshots).metrics();
}

describe('CountingHistogram', () => {
  it('is written as a prom-client Histogram with the same observations', async () => {
    const { reference, counted } = twins(VALUES);
    const text = await counted.metrics();
    expect(text).toBe(await reference.metrics());
    expect(text).toContain('demo_duration_seconds_count{method="POST",route="/b \\"q\\"\\n"} 7\n');
  });

  it('adds up across cluster workers as a prom-client Histogram does', async () => {
    const workers = [twins(VALUES), twins(VALUES.slice(3)), twins([])];
    expect(await clusterTotal(workers, 'counted')).toBe(await clusterTotal(workers, 'reference'));
  });

  it('gives the same series for the same label values, as prom-client counts them together', async () => {
    const { reference, counted, counting } = twins(VALUES);
    expect(counting.labels('GET', '/a')).toBe(counting.labels('GET', '/a'));
    counting.labels('GET', '/a').observe(0.3);
    (reference.getSingleMetric('demo_duration_seconds') as Histogram)
      .labels('GET', '/a')
      .observe(0.3);
    expect(await counted.metrics()).toBe(await reference.metrics());
  });

  it('leaves out values that are not finite numbers, and forgets everything on reset', async () => {
    const { counted, series } = twins([0.2]);
    series('GET', '/a').observe(Number.NaN);
    series('GET', '/a').observe(Number.POSITIVE_INFINITY);
    expect(await counted.metrics()).toContain(
      'demo_duration_seconds_count{method="GET",route="/a"} 1\n',
    );
    counted.resetMetrics();
    expect(await counted.metrics()).not.toContain('demo_duration_seconds_count');
    series('GET', '/a').observe(0.2);
    expect(await counted.metrics()).toContain(
      'demo_duration_seconds_count{method="GET",route="/a"} 1\n',
    );
  });
});

/** The same counts in a prom-client Counter and in a CountingCounter (through counterChildren). */
function counterTwins(counts: readonly number[]) {
  const options = {
    name: 'demo_requests_total',
    help: 'Requests with "quotes" and a back\\slash.',
    labelNames: ['method', 'status'] as const,
  };
  const reference = new Registry();
  const counter = new Counter({ ...options, registers: [reference] });
  const counted = new Registry();
  const series = counterChildren(counted, options);
  const labels = [
    ['GET', '200'],
    ['POST', '4"0\n0'],
    ['GET', '500'],
  ] as const;
  counts.forEach((amount, i) => {
    const [method, status] = labels[i % labels.length] as readonly [string, string];
    counter.labels(method, status).inc(amount);
    series(method, status).inc(amount);
  });
  return { reference, counted, series };
}

describe('CountingCounter', () => {
  const COUNTS = [1, 1, 2, 0.5, 1, 0, 3, 1e9, 1];

  it('is written as a prom-client Counter with the same counts', async () => {
    const { reference, counted } = counterTwins(COUNTS);
    const text = await counted.metrics();
    expect(text).toBe(await reference.metrics());
    expect(text).toContain('demo_requests_total{method="POST",status="4\\"0\\n0"} 1000000002\n');
  });

  it('adds up across cluster workers as a prom-client Counter does', async () => {
    const workers = [counterTwins(COUNTS), counterTwins(COUNTS.slice(2)), counterTwins([])];
    expect(await clusterTotal(workers, 'counted')).toBe(await clusterTotal(workers, 'reference'));
  });

  it('gives the same series for the same label values, and refuses to count down', async () => {
    const counted = new Registry();
    const counter = new CountingCounter({
      name: 'demo_total',
      help: 'Demo.',
      labelNames: ['kind'] as const,
      registry: counted,
    });
    expect(counter.labels('a')).toBe(counter.labels('a'));
    counter.labels('a').inc();
    counter.labels('a').inc(2);
    expect(() => counter.labels('a').inc(-1)).toThrow(/only go up/);
    expect(() => counter.labels('a').inc(Number.NaN)).toThrow(/only go up/);
    expect(await counted.metrics()).toContain('demo_total{kind="a"} 3\n');
    counted.resetMetrics();
    expect(await counted.metrics()).toContain('demo_total{kind="a"} 0\n');
  });
});

describe('countAnswers', () => {
  it('counts the answers each counter labels, by route pattern, and skips the others', async () => {
    const registry = new Registry();
    const app = createApp({ logger: createLogger({ level: 'silent', pretty: false }) });
    countAnswers(app, registry, [
      {
        name: 'demo_items_total',
        help: 'Item reads, by route and status.',
        labelNames: ['route', 'status'],
        count: (request, reply, route) =>
          request.method === 'GET' && route.startsWith('/items')
            ? [route, String(reply.statusCode)]
            : undefined,
      },
    ]);
    app.get('/items/:id', async (request, reply) =>
      (request.params as { id: string }).id === 'missing' ? reply.code(404).send({}) : {},
    );
    app.get('/other', async () => ({}));
    const server = await startTestServer(app);
    for (const path of ['/items/a', '/items/b', '/items/missing', '/other', '/nowhere']) {
      await (await fetch(`${server.url}${path}`)).arrayBuffer();
    }
    const exposition = await registry.metrics();
    expect(metricValue(exposition, 'demo_items_total{route="/items/:id",status="200"}')).toBe(2);
    expect(metricValue(exposition, 'demo_items_total{route="/items/:id",status="404"}')).toBe(1);
    expect(exposition).not.toContain('/other');
    expect(exposition).not.toContain('unmatched');
  });
});
