import {
  contextOf,
  mcpParentContext,
  remoteContext,
  SpanKind,
  startSpan,
  startTracing,
  traceHeaders,
  traceIdOf,
  tracingConfigured,
  tracingEnabled,
} from '@mcp-identity/common';
import { trace } from '@opentelemetry/api';
import { afterAll, describe, expect, it } from 'vitest';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';
const OTHER_TRACE = '0af7651916cd43dd8448eb211c80319c';
const OTHER_SPAN = 'b7ad6b7169203331';
const traceparent = (traceId: string, spanId: string) => `00-${traceId}-${spanId}-01`;

describe('tracingConfigured: the standard OTEL_* environment', () => {
  it.each([
    [{}, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, true],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }, true],
    [{ OTEL_TRACES_EXPORTER: 'otlp' }, true],
    [{ OTEL_TRACES_EXPORTER: ' OTLP ' }, true],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }, false],
    [{ OTEL_TRACES_EXPORTER: 'otlp,none' }, false],
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'zipkin' },
      false,
    ],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }, false],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'TRUE' }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'false' }, true],
  ])('%o → %s', (env, on) => {
    expect(tracingConfigured(env)).toBe(on);
  });
});

describe('traceIdOf: the incoming trace id, with tracing off', () => {
  it.each([
    [traceparent(TRACE, SPAN), TRACE],
    [`${traceparent(TRACE, SPAN)}-extra`, TRACE],
    [traceparent('0'.repeat(32), SPAN), undefined],
    ['00-not-a-trace', undefined],
    [TRACE.toUpperCase(), undefined],
    [undefined, undefined],
    [['a', 'b'], undefined],
  ])('%o → %s', (value, id) => {
    expect(traceIdOf(value)).toBe(id);
  });
});

describe('tracing on and off in one process', () => {
  const saved = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  afterAll(() => {
    if (saved === undefined) delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    else process.env.OTEL_EXPORTER_OTLP_ENDPOINT = saved;
  });

  it('stays off without the environment, extracting nothing', async () => {
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    expect(await startTracing('test-service')).toBe(false);
    expect(tracingEnabled()).toBe(false);
    const headers = { traceparent: traceparent(TRACE, SPAN) };
    expect(trace.getSpanContext(remoteContext(headers))).toBeUndefined();
  });

  it('starts with an OTLP endpoint; an MCP call’s _meta context is the parent, the HTTP one a link', async () => {
    // Nothing listens there: the spans of this test are never exported.
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = 'http://127.0.0.1:9';
    expect(await startTracing('test-service')).toBe(true);
    expect(tracingEnabled()).toBe(true);

    const headers = { traceparent: traceparent(OTHER_TRACE, OTHER_SPAN), tracestate: 'a=1' };
    const meta = { traceparent: traceparent(TRACE, SPAN), tracestate: 'rojo=00f067aa0ba902b7' };
    const both = mcpParentContext(meta, headers);
    expect(trace.getSpanContext(both.parent)).toMatchObject({
      traceId: TRACE,
      spanId: SPAN,
      isRemote: true,
    });
    expect(both.links.map((link) => link.context.spanId)).toEqual([OTHER_SPAN]);

    // Without _meta context (absent, malformed, not an object), the HTTP request's.
    for (const without of [undefined, {}, { traceparent: 'garbage' }, 'traceparent', null]) {
      const { parent, links } = mcpParentContext(without, headers);
      expect(trace.getSpanContext(parent)?.spanId).toBe(OTHER_SPAN);
      expect(links).toEqual([]);
    }
    expect(trace.getSpanContext(mcpParentContext(undefined, {}).parent)).toBeUndefined();

    // A child span carries the trace on, and its headers name it.
    const span = startSpan('child', { kind: SpanKind.CLIENT, parent: both.parent });
    const { traceId, spanId } = span.spanContext();
    expect(traceId).toBe(TRACE);
    expect(traceHeaders(span)).toEqual({
      traceparent: traceparent(TRACE, spanId),
      tracestate: 'rojo=00f067aa0ba902b7',
    });
    const grandchild = startSpan('grandchild', {
      kind: SpanKind.INTERNAL,
      parent: contextOf(span),
    });
    expect(grandchild.spanContext().traceId).toBe(TRACE);
    grandchild.end();
    span.end();
  });
});
