import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { OtlpReceiver, type ReceivedSpan, useTempDir } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientCredentialsToken } from '../src/stack/clients.js';
import type { RunningStack } from '../src/stack/start.js';
import { readSecretFile } from '../src/stack/upstream-auth.js';
import { rawGatewayToolCall, startQuietStack } from './support/stack-helpers.js';
import { waitFor } from './support/wait.js';

// The stack's four processes (the packages' dist/bin.js: `npx tsc -b packages/cli` first) export
// their traces to a real OTLP/HTTP receiver: the OTEL_* variables go to them through the
// environment each service inherits.
const STACK_MS = 120_000;
const VIEW_AND_LIST = ['internal_user_mgt_view', 'internal_user_mgt_list'];
const SERVER = 2;
const CLIENT = 3;
const OTEL_VARIABLES = ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_BSP_SCHEDULE_DELAY'] as const;

const tempDir = useTempDir();

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

describe('OpenTelemetry traces of a tool call across the stack', () => {
  let receiver: OtlpReceiver;
  let stack: RunningStack;
  const saved = new Map<string, string | undefined>();

  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
    for (const name of OTEL_VARIABLES) saved.set(name, process.env[name]);
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
    // Batches leave every 100 ms: the test polls the receiver rather than waiting 5 s.
    process.env.OTEL_BSP_SCHEDULE_DELAY = '100';
    stack = await startQuietStack(join(tempDir(), 'data'));
  }, STACK_MS);

  afterAll(async () => {
    await stack?.stop();
    await receiver?.close();
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }, STACK_MS);

  /** A token of the stack's client application for the SCIM read tools. */
  const viewerToken = async () =>
    (await clientCredentialsToken(stack.layout, stack.secrets.clientApp, VIEW_AND_LIST))
      .accessToken;
  const inTrace = (traceId: string) => receiver.spans.filter((span) => span.traceId === traceId);
  const one = (spans: ReceivedSpan[], what: string, match: (span: ReceivedSpan) => boolean) => {
    const found = spans.filter(match);
    expect(found, what).toHaveLength(1);
    return found[0] as ReceivedSpan;
  };
  const childrenOf = (spans: ReceivedSpan[], parent: ReceivedSpan) =>
    spans.filter((span) => span.parentSpanId === parent.spanId);

  /** Waits until the trace holds the IdP's answer to the SCIM request the tool call made. */
  const waitForScimAnswer = (traceId: string) =>
    waitFor(
      () =>
        inTrace(traceId).some(
          (span) => span.service === 'mcp-identity-idp' && span.name.includes('/scim2/'),
        ) &&
        inTrace(traceId).some(
          (span) => span.service === 'mcp-identity-gateway' && span.kind === SERVER,
        ),
      `the spans of trace ${traceId}`,
      30_000,
    );

  it(
    'exports one trace, the client’s, from the gateway, the SCIM MCP server and the IdP, parented hop by hop',
    async () => {
      const { layout } = stack;
      const accessToken = await viewerToken();
      const traceId = hex(16);
      const clientSpanId = hex(8);
      const outcome = await rawGatewayToolCall(
        layout,
        accessToken,
        'trace-1',
        'search_users',
        { filter: 'userName sw a', count: 5 },
        { headers: { traceparent: `00-${traceId}-${clientSpanId}-01` } },
      );
      expect(outcome.status).toBe(200);
      await waitForScimAnswer(traceId);
      const spans = inTrace(traceId);

      // The gateway: its SERVER span is the client's span's child, named and attributed as
      // the MCP conventions say, with its decision.
      const gateway = one(
        spans,
        'gateway server span',
        (span) => span.service === 'mcp-identity-gateway' && span.kind === SERVER,
      );
      expect(gateway.parentSpanId).toBe(clientSpanId);
      expect(gateway.name).toBe('tools/call search_users');
      expect(gateway.attributes).toMatchObject({
        'mcp.method.name': 'tools/call',
        'gen_ai.tool.name': 'search_users',
        'jsonrpc.request.id': 'trace-1',
        'http.request.method': 'POST',
        'http.route': new URL(layout.gateway.mcpUrl).pathname,
        'http.response.status_code': 200,
        'mcp_identity.decision': 'allowed',
        'mcp_identity.upstream_status': 200,
      });
      const upstream = one(
        childrenOf(spans, gateway),
        'gateway client span',
        (span) => span.kind === CLIENT,
      );
      expect(upstream.service).toBe('mcp-identity-gateway');
      expect(upstream.attributes).toMatchObject({
        'http.request.method': 'POST',
        'http.response.status_code': 200,
        'server.port': layout.ports.mcp,
      });
      expect(upstream.attributes['url.full']).toMatch(/^http:\/\/[^/?]+\/mcp$/);

      // The SCIM MCP server continues the trace from the gateway's upstream request.
      const mcp = one(
        childrenOf(spans, upstream),
        'SCIM MCP server span',
        (span) => span.kind === SERVER,
      );
      expect(mcp.service).toBe('mcp-identity-scim-mcp');
      expect(mcp.name).toBe('tools/call search_users');
      expect(mcp.attributes).toMatchObject({
        'mcp.method.name': 'tools/call',
        'gen_ai.tool.name': 'search_users',
        'jsonrpc.request.id': 'trace-1',
        'http.route': '/mcp',
        'http.response.status_code': 200,
      });

      // Each request the workflow made is a CLIENT span of the MCP call, answered by an IdP
      // SERVER span that is its child: the SCIM search, and the backend's token request.
      const requests = childrenOf(spans, mcp).filter((span) => span.kind === CLIENT);
      const scim = one(requests, 'SCIM request span', (span) =>
        String(span.attributes['url.full']).startsWith(`${layout.idp.url}/scim2/`),
      );
      const token = one(
        requests,
        'token request span',
        (span) => span.attributes['url.full'] === layout.idp.tokenUrl,
      );
      for (const request of [scim, token]) {
        expect(request.service).toBe('mcp-identity-scim-mcp');
        expect(request.attributes['http.response.status_code']).toBe(200);
        expect(String(request.attributes['url.full'])).not.toContain('?');
        const answer = one(
          childrenOf(spans, request),
          'IdP server span',
          (span) => span.kind === SERVER,
        );
        expect(answer.service).toBe('mcp-identity-idp');
        expect(answer.attributes['http.response.status_code']).toBe(200);
        expect(answer.attributes['http.route']).toBeTypeOf('string');
      }
      expect(token.attributes['http.request.method']).toBe('POST');
      const tokenAnswer = childrenOf(spans, token)[0] as ReceivedSpan;
      expect(tokenAnswer.name).toBe('POST /oauth2/token');

      // Every span of the trace hangs from the client's span: nothing started a trace of its own.
      const ids = new Set([clientSpanId, ...spans.map((span) => span.spanId)]);
      for (const span of spans) expect(ids.has(span.parentSpanId), span.name).toBe(true);

      // The gateway's audit line names the trace and the span.
      const auditLogged = () =>
        readFileSync(join(layout.logDir, 'gateway.log'), 'utf8')
          .split('\n')
          .filter((line) => line.includes('"audit"'))
          .map((line) => JSON.parse(line) as { audit: Record<string, unknown> })
          .some(({ audit }) => audit.traceId === traceId && audit.spanId === gateway.spanId);
      await waitFor(auditLogged, 'the audit line with the trace id', 30_000);
    },
    STACK_MS,
  );

  it(
    'takes the MCP request’s params._meta context as the parent, linking the HTTP one, and passes it on',
    async () => {
      const { layout } = stack;
      const accessToken = await viewerToken();
      const metaTrace = hex(16);
      const metaSpan = hex(8);
      const headerTrace = hex(16);
      const headerSpan = hex(8);
      const outcome = await rawGatewayToolCall(
        layout,
        accessToken,
        'trace-2',
        'search_users',
        { filter: 'userName sw a', count: 1 },
        {
          headers: { traceparent: `00-${headerTrace}-${headerSpan}-01` },
          meta: { traceparent: `00-${metaTrace}-${metaSpan}-01`, tracestate: 'vendor=x' },
        },
      );
      expect(outcome.status).toBe(200);
      await waitForScimAnswer(metaTrace);
      const spans = inTrace(metaTrace);
      const gateway = one(
        spans,
        'gateway server span',
        (span) => span.service === 'mcp-identity-gateway' && span.kind === SERVER,
      );
      expect(gateway.parentSpanId).toBe(metaSpan);
      expect(gateway.links).toEqual([{ traceId: headerTrace, spanId: headerSpan }]);
      const upstream = one(
        childrenOf(spans, gateway),
        'gateway client span',
        (span) => span.kind === CLIENT,
      );
      // The gateway put its own context in the forwarded `_meta`: the SCIM MCP server's span is
      // the child of the gateway's upstream request, not of the client's span.
      const mcp = one(
        spans,
        'SCIM MCP server span',
        (span) => span.service === 'mcp-identity-scim-mcp' && span.kind === SERVER,
      );
      expect(mcp.parentSpanId).toBe(upstream.spanId);
      expect(inTrace(headerTrace)).toEqual([]);
    },
    STACK_MS,
  );

  it(
    'exports no token, secret or credential in any attribute of any span',
    async () => {
      const { layout, secrets } = stack;
      const accessToken = await viewerToken();
      // A refused call too: its span records why, never what the caller sent.
      const refused = await rawGatewayToolCall(
        layout,
        `${accessToken}x`,
        'bad',
        'search_users',
        {},
        { headers: { traceparent: `00-${hex(16)}-${hex(8)}-01` } },
      );
      expect(refused.status).toBe(401);
      const secretsUsed = [
        accessToken,
        secrets.clientApp.clientSecret,
        secrets.backendApp.clientSecret,
        secrets.readOnlyApp.clientSecret,
        secrets.gatewayAdmin.password,
        secrets.areaAccount.password,
        readSecretFile(layout.mcp.upstreamSecretFile),
      ];
      await waitFor(
        () =>
          receiver.spans.some(
            (span) => span.attributes['mcp_identity.decision'] === 'unauthenticated',
          ),
        'the refused call’s span',
        30_000,
      );
      expect(receiver.spans.length).toBeGreaterThan(10);
      for (const span of receiver.spans) {
        for (const [key, value] of Object.entries(span.attributes)) {
          const text = JSON.stringify(value);
          for (const secret of secretsUsed)
            expect(text, `${span.name} ${key}`).not.toContain(secret);
          // A JWT (any token the IdP issued, the backend's too) or an HTTP credential.
          expect(text, `${span.name} ${key}`).not.toMatch(/eyJ|Bearer|Basic /);
        }
      }
      for (const body of receiver.bodies) {
        for (const secret of secretsUsed) expect(body.includes(secret)).toBe(false);
      }
    },
    STACK_MS,
  );
});
