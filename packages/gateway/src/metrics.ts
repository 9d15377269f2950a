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

interface Histogram {
  buckets: number[];
  sum: number;
  count: number;
}

/** Counters and a latency histogram for MCP requests, rendered in Prometheus text format. */
export class GatewayMetrics {
  private readonly requests = new Map<string, number>();
  private readonly latency = new Map<string, Histogram>();
  private readonly uncaught = { exception: 0, rejection: 0 };

  /** An error that escaped every handler and was contained by the process guard. */
  recordUncaught(kind: 'exception' | 'rejection'): void {
    this.uncaught[kind] += 1;
  }

  record(proxy: string, method: string, decision: string, seconds: number): void {
    const labels = `proxy="${escapeLabel(proxy)}",method="${escapeLabel(methodLabel(method))}",decision="${decision}"`;
    this.requests.set(labels, (this.requests.get(labels) ?? 0) + 1);
    const key = `proxy="${escapeLabel(proxy)}"`;
    let histogram = this.latency.get(key);
    if (!histogram) {
      histogram = { buckets: LATENCY_BUCKETS.map(() => 0), sum: 0, count: 0 };
      this.latency.set(key, histogram);
    }
    LATENCY_BUCKETS.forEach((bound, i) => {
      if (seconds <= bound) (histogram as Histogram).buckets[i]! += 1;
    });
    histogram.sum += seconds;
    histogram.count += 1;
  }

  render(): string {
    const lines = [
      '# HELP mcp_gateway_requests_total MCP requests handled by the gateway.',
      '# TYPE mcp_gateway_requests_total counter',
    ];
    for (const [labels, value] of this.requests)
      lines.push(`mcp_gateway_requests_total{${labels}} ${value}`);
    lines.push(
      '# HELP mcp_gateway_request_duration_seconds Time from request to the end of the response.',
      '# TYPE mcp_gateway_request_duration_seconds histogram',
    );
    for (const [labels, h] of this.latency) {
      LATENCY_BUCKETS.forEach((bound, i) => {
        lines.push(
          `mcp_gateway_request_duration_seconds_bucket{${labels},le="${bound}"} ${h.buckets[i]}`,
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
