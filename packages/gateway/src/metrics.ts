const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

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

export function methodLabel(method: string): string {
  return KNOWN_METHODS.has(method) ? method : 'other';
}

const escapeLabel = (value: string) =>
  value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');

/** Per-bucket counts (not cumulative: a sample counts once, in its lowest bucket). */
interface Histogram {
  buckets: number[];
  sum: number;
  count: number;
}

/** One proxy's series: request counters by method label and decision, and its latency. */
interface ProxySeries {
  labels: string;
  requests: Map<string, Map<string, { value: number }>>;
  latency: Histogram;
}

/**
 * Counters and a latency histogram for MCP requests, rendered in Prometheus text format.
 * Recording a request looks its series up by the label values it already has, so the hot path
 * builds no label strings; they are escaped and joined only when `/metrics` is scraped.
 */
export class GatewayMetrics {
  private readonly proxies = new Map<string, ProxySeries>();
  private readonly uncaught = { exception: 0, rejection: 0 };

  /** An error that escaped every handler and was contained by the process guard. */
  recordUncaught(kind: 'exception' | 'rejection'): void {
    this.uncaught[kind] += 1;
  }

  record(proxy: string, method: string, decision: string, seconds: number): void {
    let series = this.proxies.get(proxy);
    if (!series) {
      series = {
        labels: `proxy="${escapeLabel(proxy)}"`,
        requests: new Map(),
        latency: { buckets: LATENCY_BUCKETS.map(() => 0), sum: 0, count: 0 },
      };
      this.proxies.set(proxy, series);
    }
    const label = methodLabel(method);
    let byDecision = series.requests.get(label);
    if (!byDecision) {
      byDecision = new Map();
      series.requests.set(label, byDecision);
    }
    const counter = byDecision.get(decision);
    if (counter) counter.value += 1;
    else byDecision.set(decision, { value: 1 });
    const { latency } = series;
    for (let i = 0; i < LATENCY_BUCKETS.length; i++) {
      if (seconds <= (LATENCY_BUCKETS[i] as number)) {
        latency.buckets[i]! += 1;
        break;
      }
    }
    latency.sum += seconds;
    latency.count += 1;
  }

  render(): string {
    const lines = [
      '# HELP mcp_gateway_requests_total MCP requests handled by the gateway.',
      '# TYPE mcp_gateway_requests_total counter',
    ];
    for (const { labels, requests } of this.proxies.values()) {
      for (const [method, byDecision] of requests) {
        for (const [decision, { value }] of byDecision) {
          lines.push(
            `mcp_gateway_requests_total{${labels},method="${escapeLabel(method)}",decision="${decision}"} ${value}`,
          );
        }
      }
    }
    lines.push(
      '# HELP mcp_gateway_request_duration_seconds Time from request to the end of the response.',
      '# TYPE mcp_gateway_request_duration_seconds histogram',
    );
    for (const { labels, latency: h } of this.proxies.values()) {
      let cumulative = 0;
      LATENCY_BUCKETS.forEach((bound, i) => {
        cumulative += h.buckets[i] as number;
        lines.push(
          `mcp_gateway_request_duration_seconds_bucket{${labels},le="${bound}"} ${cumulative}`,
        );
      });
      lines.push(`mcp_gateway_request_duration_seconds_bucket{${labels},le="+Inf"} ${h.count}`);
      lines.push(`mcp_gateway_request_duration_seconds_sum{${labels}} ${h.sum}`);
      lines.push(`mcp_gateway_request_duration_seconds_count{${labels}} ${h.count}`);
    }
    lines.push(
      '# HELP mcp_gateway_uncaught_errors_total Errors no handler caught, contained by the process guard.',
      '# TYPE mcp_gateway_uncaught_errors_total counter',
      `mcp_gateway_uncaught_errors_total{kind="exception"} ${this.uncaught.exception}`,
      `mcp_gateway_uncaught_errors_total{kind="rejection"} ${this.uncaught.rejection}`,
    );
    return `${lines.join('\n')}\n`;
  }
}
