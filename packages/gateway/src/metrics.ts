import {
  CountingCounter,
  CountingHistogram,
  createMetricsRegistry,
  DURATION_BUCKETS,
  labelChildren,
} from '@mcp-identity/common';
import { AggregatorRegistry, Counter, Gauge, Registry } from 'prom-client';

/**
 * Methods reported by name (JSON-RPC methods, the HTTP verbs without a JSON-RPC body — `POST`
 * when a request was refused from its headers, before its body was read —, client replies and
 * unparseable bodies); any other method string from a client counts as `other`.
 */
const KNOWN_METHODS = new Set([
  'GET',
  'POST',
  'DELETE',
  'OPTIONS',
  'response',
  'invalid',
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'resources/list',
  'resources/read',
  'resources/templates/list',
  'resources/subscribe',
  'resources/unsubscribe',
  'prompts/list',
  'prompts/get',
  'completion/complete',
  'logging/setLevel',
  'notifications/initialized',
  'notifications/cancelled',
  'notifications/progress',
  'notifications/roots/list_changed',
]);

function methodLabel(method: string): string {
  return KNOWN_METHODS.has(method) ? method : 'other';
}

/** What the gauges read when scraped: the state of the data plane at that moment. */
export interface DataPlaneState {
  /** Each routed proxy's upstream connections: requests in flight, and waiting for one. */
  upstreams(): Iterable<{ id: string; upstream: { inFlight: number; queued: number } }>;
  /** Bytes the buffered answers (lists being filtered) hold, all proxies. */
  bufferedAnswerBytes(): number;
}

/** One process's metrics as prom-client JSON: what a worker sends the primary to add up. */
export type MetricsSnapshot = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

const REQUESTS = 'mcp_gateway_requests_total';

const BUCKET_LE_FIRST = /^(\w+_bucket)\{le="([^"]*)",(.*)\}/gm;

/**
 * prom-client writes a bucket's `le` before the other labels; the gateway has always written it
 * last (`{proxy="…",le="…"}`). Prometheus reads either order; dashboards and checks matching the
 * text keep working.
 */
function leLast(exposition: string): string {
  return exposition.replace(BUCKET_LE_FIRST, '$1{$3,le="$2"}');
}

/**
 * The gateway's metrics on prom-client, in a registry of its own (several gateways may share a
 * process), with Node.js process metrics. Requests are counted in a `CountingCounter` and timed in
 * a `CountingHistogram` (common), whose series `labelChildren` finds through the label values the
 * request already has: a prom-client child hashes its labels on every call, which would cost more
 * than the rest of the recording.
 */
export class GatewayMetrics {
  private readonly registry = createMetricsRegistry();
  private readonly requests = labelChildren(
    new CountingCounter({
      name: REQUESTS,
      help: 'MCP requests handled by the gateway.',
      labelNames: ['proxy', 'method', 'decision'] as const,
      registry: this.registry,
    }),
  );
  private readonly latency = labelChildren(
    new CountingHistogram({
      name: 'mcp_gateway_request_duration_seconds',
      help: 'Time from request to the end of the response.',
      labelNames: ['proxy'] as const,
      buckets: DURATION_BUCKETS,
      registry: this.registry,
    }),
  );
  /** Rare (a failure each), so a plain prom-client counter: its label hashing costs nothing here. */
  private readonly upstreamFailures = new Counter({
    name: 'mcp_gateway_upstream_failures_total',
    help: "Allowed MCP requests whose exchange with the upstream failed, by how (the audit line's upstreamFailure).",
    labelNames: ['proxy', 'failure'] as const,
    registers: [this.registry],
  });
  private state: DataPlaneState | undefined = undefined;
  private readonly buffered: Gauge = new Gauge({
    name: 'mcp_gateway_buffered_answer_bytes',
    help: 'Bytes held by upstream answers buffered to be filtered (at most limits.max_buffered_answer_bytes).',
    registers: [this.registry],
    collect: (): void => this.buffered.set(this.state?.bufferedAnswerBytes() ?? 0),
  });
  private readonly uncaught = new Counter({
    name: 'mcp_gateway_uncaught_errors_total',
    help: 'Errors no handler caught, contained by the process guard.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  constructor() {
    this.upstreamGauge(
      'mcp_gateway_upstream_in_flight',
      'Requests each proxy has in flight to its upstream (at most limits.upstream_connections).',
      (u) => u.inFlight,
    );
    this.upstreamGauge(
      'mcp_gateway_upstream_queued',
      "Requests waiting for one of their proxy's upstream connections (at most limits.upstream_queue_length).",
      (u) => u.queued,
    );
    // Both series exist from the start: anything but 0 is a bug, and 0 is worth seeing.
    this.uncaught.labels('exception').inc(0);
    this.uncaught.labels('rejection').inc(0);
  }

  /** Where the gauges read the data plane's state, read only when scraped (nothing per request). */
  observe(state: DataPlaneState): void {
    this.state = state;
  }

  private upstreamGauge(
    name: string,
    help: string,
    value: (upstream: { inFlight: number; queued: number }) => number,
  ): Gauge<'proxy'> {
    const gauge: Gauge<'proxy'> = new Gauge({
      name,
      help,
      labelNames: ['proxy'] as const,
      registers: [this.registry],
      collect: () => {
        // Removed proxies leave the series with them.
        gauge.reset();
        for (const { id, upstream } of this.state?.upstreams() ?? []) {
          gauge.labels(id).set(value(upstream));
        }
      },
    });
    return gauge;
  }

  /** An error that escaped every handler and was contained by the process guard. */
  recordUncaught(kind: 'exception' | 'rejection'): void {
    this.uncaught.labels(kind).inc();
  }

  record(proxy: string, method: string, decision: string, seconds: number): void {
    this.requests(proxy, methodLabel(method), decision).inc();
    this.latency(proxy).observe(seconds);
  }

  recordUpstreamFailure(proxy: string, failure: string): void {
    this.upstreamFailures.labels(proxy, failure).inc();
  }

  /** This process's metrics in the Prometheus text format. */
  async render(): Promise<string> {
    return leLast(await this.registry.metrics());
  }

  snapshot(): Promise<MetricsSnapshot> {
    return this.registry.getMetricsAsJSON();
  }

  /**
   * `gateway serve --workers N`: the primary's metrics and its workers' added up (prom-client's
   * cluster aggregation: counters and histograms summed, each process metric as prom-client
   * defines), plus `mcp_gateway_worker_requests_total{pid}`, the MCP requests of each worker.
   */
  async renderCluster(workers: { pid: number; metrics: MetricsSnapshot }[]): Promise<string> {
    const perWorker = new Registry();
    const handled = new Counter({
      name: 'mcp_gateway_worker_requests_total',
      help: 'MCP requests handled by each worker process.',
      labelNames: ['pid'] as const,
      registers: [perWorker],
    });
    for (const { pid, metrics } of workers) {
      const values = metrics.find((metric) => metric.name === REQUESTS)?.values ?? [];
      handled.labels(String(pid)).inc(values.reduce((sum, { value }) => sum + value, 0));
    }
    const total = AggregatorRegistry.aggregate<typeof Registry.PROMETHEUS_CONTENT_TYPE>([
      await this.snapshot(),
      ...workers.map((worker) => worker.metrics),
    ]);
    return leLast(await Registry.merge([total, perWorker]).metrics());
  }
}
