import {
  type Attributes,
  type Context,
  context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  type Link,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapPropagator,
  type TimeInput,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { onShutdown } from './shutdown.js';

/*
 * OpenTelemetry traces, exported over OTLP/HTTP when the standard environment asks for them
 * and off otherwise. While off, the SDK is never loaded and callers skip span work behind one
 * check (`tracingEnabled`); `@opentelemetry/api` alone is imported here, for its types and its
 * no-op defaults. Spans are made where the meaning of a request is known (an MCP call, a token
 * request), never by HTTP auto-instrumentation, and never carry a credential: no header value,
 * form, query string or body goes into an attribute.
 */

declare module 'fastify' {
  interface FastifyContextConfig {
    /** This route makes no span (health probes, which would bury the traces that matter). */
    untraced?: boolean;
  }
}

export { type Attributes, type Context, type Span, SpanKind };

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Whether the standard OpenTelemetry environment asks for traces over OTLP: an OTLP endpoint
 * (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) or
 * `OTEL_TRACES_EXPORTER=otlp`; never with `OTEL_SDK_DISABLED=true`, nor when
 * `OTEL_TRACES_EXPORTER` names exporters without `otlp` (`none`, or one this build lacks).
 */
export function tracingConfigured(env: Env = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '');
  if (exporters.length > 0) return exporters.includes('otlp') && !exporters.includes('none');
  return Boolean(
    env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim(),
  );
}

interface Active {
  tracer: Tracer;
  propagator: TextMapPropagator;
  shutdown(): Promise<void>;
}

let active: Active | undefined;

/** Whether spans are being made and exported: the one check on every hot path. */
export function tracingEnabled(): boolean {
  return active !== undefined;
}

/**
 * Starts tracing when the environment asks for it (`tracingConfigured`): loads the SDK, names
 * the service (`serviceName` unless `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` says
 * otherwise), and exports batches over OTLP/HTTP as `OTEL_EXPORTER_OTLP_*`, `OTEL_BSP_*` and
 * `OTEL_TRACES_SAMPLER*` configure them (the SDK reads those). The spans still queued are sent
 * on shutdown, after the servers have closed. Returns whether tracing is on.
 */
export async function startTracing(serviceName: string): Promise<boolean> {
  if (active || !tracingConfigured(process.env)) return active !== undefined;
  const [node, otlp, resources, core] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/core'),
  ]);
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': serviceName }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new node.NodeTracerProvider({
    resource,
    spanProcessors: [new node.BatchSpanProcessor(new otlp.OTLPTraceExporter())],
  });
  const propagator = new core.W3CTraceContextPropagator();
  // The async-local context (`activeContext`) follows a request into the code it calls.
  provider.register({ propagator });
  active = {
    tracer: provider.getTracer('mcp-identity'),
    propagator,
    shutdown: () => provider.shutdown(),
  };
  onShutdown(stopTracing, { last: true });
  return true;
}

/**
 * Exports the spans still queued and stops exporting; nothing while tracing is off. For a
 * process that exits other than through the signal handlers (a gateway worker told to stop).
 */
export function stopTracing(): Promise<void> {
  return active ? active.shutdown() : Promise.resolve();
}

/** A carrier of W3C trace context: HTTP headers, or an MCP request's `params._meta`. */
export type TraceCarrier = Readonly<Record<string, unknown>>;

/**
 * The remote parent a carrier names (`traceparent`, `tracestate`, W3C Trace Context §3); the
 * root context when it names none or a malformed one.
 */
export function remoteContext(carrier: TraceCarrier | undefined): Context {
  if (!active || carrier === undefined) return ROOT_CONTEXT;
  return active.propagator.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
}

/**
 * The parent of an MCP server span: the context in the request's `params._meta` when it has
 * one (the OpenTelemetry MCP conventions: MCP and transport contexts are independent, and the
 * MCP one is the parent), else the HTTP request's. When both are there and differ, the
 * transport's is returned as a link.
 */
export function mcpParentContext(
  meta: unknown,
  headers: TraceCarrier,
): { parent: Context; links: Link[] } {
  const transport = remoteContext(headers);
  const fromMeta =
    meta !== null && typeof meta === 'object' ? remoteContext(meta as TraceCarrier) : ROOT_CONTEXT;
  const metaSpan = trace.getSpanContext(fromMeta);
  if (!metaSpan) return { parent: transport, links: [] };
  const transportSpan = trace.getSpanContext(transport);
  const links =
    transportSpan && transportSpan.spanId !== metaSpan.spanId ? [{ context: transportSpan }] : [];
  return { parent: fromMeta, links };
}

/** The context the code now running was called in (a request's span, through async calls). */
export function activeContext(): Context {
  return context.active();
}

/** A context whose span is `span`: the parent of spans made for it. */
export function contextOf(span: Span): Context {
  return trace.setSpan(ROOT_CONTEXT, span);
}

/** Runs `fn` with `span` as the active span: spans made inside it are its children. */
export function withSpan<T>(span: Span, fn: () => T): T {
  return context.with(trace.setSpan(context.active(), span), fn);
}

export interface SpanOptions {
  kind: SpanKind;
  parent: Context;
  attributes?: Attributes;
  links?: Link[];
  /** When the work began, if before now (`performance.now()` milliseconds or epoch). */
  startTime?: TimeInput;
}

/** Starts a span (a no-op one while tracing is off: callers check `tracingEnabled` first). */
export function startSpan(name: string, options: SpanOptions): Span {
  const tracer = active?.tracer ?? trace.getTracer('mcp-identity');
  return tracer.startSpan(
    name,
    {
      kind: options.kind,
      attributes: options.attributes,
      links: options.links,
      startTime: options.startTime,
    },
    options.parent,
  );
}

/** The `traceparent` (and `tracestate`) headers naming `span` as the parent of a request. */
export function traceHeaders(span: Span): Record<string, string> {
  const headers: Record<string, string> = {};
  active?.propagator.inject(contextOf(span), headers, defaultTextMapSetter);
  return headers;
}

/**
 * Ends a SERVER span with `http.response.status_code`; `error.type` (and an error status) for
 * a 5xx or the given failure: a 4xx is the client's error, not the server's (HTTP semantic
 * conventions).
 */
export function endServerSpan(span: Span, status: number | undefined, errorType?: string): void {
  endHttpSpan(
    span,
    status,
    errorType ?? (status !== undefined && status >= 500 ? String(status) : undefined),
  );
}

/**
 * Ends a CLIENT span with `http.response.status_code` when an answer came; `error.type` for
 * a 4xx or 5xx answer, or the failure of a request that got none.
 */
export function endClientSpan(span: Span, status: number | undefined, errorType?: string): void {
  endHttpSpan(
    span,
    status,
    errorType ?? (status !== undefined && status >= 400 ? String(status) : undefined),
  );
}

function endHttpSpan(span: Span, status: number | undefined, errorType: string | undefined): void {
  if (status !== undefined && status > 0) span.setAttribute('http.response.status_code', status);
  if (errorType !== undefined) {
    span.setAttribute('error.type', errorType);
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}

/** `scheme://host[:port]/path` of a URL: never its query or fragment, which may hold secrets. */
export function urlWithoutQuery(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}`;
}

/** The attributes of a CLIENT span for a request to `url` (HTTP semantic conventions). */
export function httpClientAttributes(method: string, url: URL): Attributes {
  return {
    'http.request.method': method,
    'url.full': urlWithoutQuery(url),
    'server.address': url.hostname,
    'server.port': url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80,
  };
}

const TRACEPARENT = /^[\da-f]{2}-([\da-f]{32})-([\da-f]{16})-[\da-f]{2}/;
const INVALID_TRACE_ID = '00000000000000000000000000000000';

/**
 * The trace id a `traceparent` value names (W3C Trace Context §3.2), without loading anything:
 * what a log line can carry when a client sent one and tracing is off.
 */
export function traceIdOf(traceparent: unknown): string | undefined {
  if (typeof traceparent !== 'string') return undefined;
  const id = TRACEPARENT.exec(traceparent)?.[1];
  return id === undefined || id === INVALID_TRACE_ID ? undefined : id;
}

const requestSpans = new WeakMap<FastifyRequest, Span>();

/**
 * A SERVER span for each request a Fastify app routes (the IdP's, the management API's, the
 * MCP server's with authentication), child of the context the request's headers carry, named
 * `{method} {route}` with the route template, never the raw URL. The rest of the request's
 * handling runs in its context, so that the requests it makes are its children. Added by
 * `createApp` only while tracing is on.
 */
export function traceFastifyRequests(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const { routeOptions } = request;
    if (routeOptions.config?.untraced) return done();
    const route = routeOptions.url;
    const span = startSpan(route ? `${request.method} ${route}` : request.method, {
      kind: SpanKind.SERVER,
      parent: remoteContext(request.headers),
      attributes: {
        'http.request.method': request.method,
        ...(route && { 'http.route': route }),
        'url.path': request.url.split('?', 1)[0],
        'url.scheme': request.protocol,
      },
    });
    requestSpans.set(request, span);
    withSpan(span, done);
  });
  app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done) => {
    const span = requestSpans.get(request);
    if (span) endServerSpan(span, reply.statusCode);
    done();
  });
}
