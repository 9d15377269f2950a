import { createLogger } from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
import { startGateway } from '@mcp-identity/gateway';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN,
  basic,
  type GatewayFixture,
  proxyDefinition,
  startTestGateway,
} from './fixtures/gateway.js';
import { json } from './fixtures/mcp-client.js';
import { startUpstream, type Upstream } from './fixtures/upstream.js';

const BASE = '/api/management/v1/mcp-proxies';
const tempDir = useTempDir('gw-mgmt-');

const YAML_DEFINITION = (upstream: string) => `apiVersion: gateway.api-platform.vendor/v1
kind: Mcp
metadata:
  name: scim-v1.0
  labels:
    team: identity
spec:
  displayName: scim
  version: v1.0
  context: /scim
  specVersions: ["2025-06-18", "2025-11-25"]
  upstream:
    url: ${upstream}
  tools: []
  resources: []
  prompts: []
`;

describe('management API', () => {
  let fx: GatewayFixture;
  let upstream: Upstream;
  const dataDir = tempDir();

  beforeAll(async () => {
    upstream = await startUpstream();
    fx = await startTestGateway({ dataDir });
  });
  afterAll(async () => {
    await fx?.gateway.close();
    await upstream?.close();
  });

  it('requires HTTP Basic credentials of an admin', async () => {
    const none = await fetch(`${fx.gateway.managementUrl}${BASE}`);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toContain('Basic');
    expect(await json(none)).toMatchObject({ status: 'error' });
    const wrong = await fx.management(BASE, { headers: { authorization: basic('admin', 'nope') } });
    expect(wrong.status).toBe(401);
    const unknown = await fx.management(BASE, { headers: { authorization: basic('root', 'x') } });
    expect(unknown.status).toBe(401);
  });

  it('creates a proxy from YAML and returns it with its status', async () => {
    const response = await fx.management(BASE, {
      method: 'POST',
      headers: { 'content-type': 'application/yaml' },
      body: YAML_DEFINITION(upstream.mcpUrl),
    });
    expect(response.status).toBe(201);
    const body = await json(response);
    expect(body.metadata).toEqual({ name: 'scim-v1.0', labels: { team: 'identity' } });
    expect(body.spec.context).toBe('/scim');
    expect(body.status).toMatchObject({ id: 'scim-v1.0', state: 'deployed' });
    expect(body.status.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(body.status.deployedAt).toBe(body.status.createdAt);

    const again = await fx.management(BASE, {
      method: 'POST',
      headers: { 'content-type': 'application/yaml' },
      body: YAML_DEFINITION(upstream.mcpUrl),
    });
    expect(again.status).toBe(409);
    expect((await json(again)).status).toBe('error');
  });

  it('lists, filters, reads, updates and deletes', async () => {
    const second = proxyDefinition('other-v2.0', '/other', upstream.mcpUrl);
    (second.spec as Record<string, unknown>).version = 'v2.0';
    expect((await fx.deploy(second)).status).toBe(201);

    const list = await json(await fx.management(BASE));
    expect(list).toMatchObject({ status: 'success', count: 2 });
    const filtered = await json(await fx.management(`${BASE}?version=v2.0`));
    expect(filtered.count).toBe(1);
    expect(filtered.mcpProxies[0].metadata.name).toBe('other-v2.0');
    expect((await json(await fx.management(`${BASE}?displayName=scim`))).count).toBe(1);
    expect((await json(await fx.management(`${BASE}?status=undeployed`))).count).toBe(0);

    const one = await fx.management(`${BASE}/other-v2.0`);
    expect(one.status).toBe(200);
    expect((await json(one)).spec.context).toBe('/other');

    (second.spec as Record<string, unknown>).deploymentState = 'undeployed';
    const put = await fx.management(`${BASE}/other-v2.0`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(second),
    });
    expect(put.status).toBe(200);
    const updated = await json(put);
    expect(updated.status).toMatchObject({ state: 'undeployed', deployedAt: null });
    const routed = await fetch(`${fx.gateway.plainUrl}/other/mcp`, { method: 'POST', body: '{}' });
    expect(routed.status).toBe(404);

    const del = await fx.management(`${BASE}/other-v2.0`, { method: 'DELETE' });
    expect(await json(del)).toEqual({
      status: 'success',
      message: 'MCP proxy configuration deleted successfully',
      id: 'other-v2.0',
    });
    expect((await fx.management(`${BASE}/other-v2.0`)).status).toBe(404);
    expect((await fx.management(`${BASE}/other-v2.0`, { method: 'DELETE' })).status).toBe(404);
  });

  it('answers 404 for unknown handles on GET and PUT, 400 for invalid PUT bodies', async () => {
    const get = await fx.management(`${BASE}/nope`);
    expect(get.status).toBe(404);
    expect(await json(get)).toEqual({
      status: 'error',
      message: "MCP proxy configuration with handle 'nope' not found",
    });
    const put = await fx.management(`${BASE}/nope`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(proxyDefinition('nope', '/nope', upstream.mcpUrl)),
    });
    expect(put.status).toBe(404);
    const invalid = await fx.management(`${BASE}/scim-v1.0`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'Mcp' }),
    });
    expect(invalid.status).toBe(400);
  });

  it('reports every validation error at once, with field paths', async () => {
    const response = await fx.deploy({
      apiVersion: 'v0',
      kind: 'Api',
      metadata: { name: 'bad name', labels: { 'a key': 'x' } },
      spec: {
        displayName: 'bad/name',
        version: '1.x',
        context: '/_gateway-health/x',
        specVersions: ['2024-11-05'],
        upstream: {},
        policies: [
          { name: 'no-such-policy', version: 'v1' },
          { name: 'mcp-auth', version: 'v1.0.0' },
          { name: 'mcp-authz', version: 'v1', params: { tools: [{ name: 't' }], bogus: 1 } },
        ],
      },
    });
    expect(response.status).toBe(400);
    const body = await json(response);
    expect(body.status).toBe('error');
    expect(body.message).toMatch(/^configuration validation failed with \d+ error\(s\): 1\. /);
    const fields = body.errors.map((e: { field: string }) => e.field);
    expect(fields).toEqual(
      expect.arrayContaining([
        'apiVersion',
        'kind',
        'metadata.name',
        'metadata.labels.a key',
        'spec.displayName',
        'spec.version',
        'spec.context',
        'spec.specVersions[0]',
        'spec.upstream.url',
        'spec.policies[0].name',
        'spec.policies[1].version',
        'spec.policies[2].params.bogus',
        'spec.policies[2].params.tools[0]',
      ]),
    );
  });

  it('rejects unknown mcp-auth params and key managers, accepts the deprecated specVersion', async () => {
    const bad = proxyDefinition('p1', '/p1', upstream.mcpUrl, [
      { name: 'mcp-auth', version: 'v1', params: { issuers: ['idp'], gatewayHost: 'x' } },
    ]);
    const response = await fx.deploy(bad);
    expect(response.status).toBe(400);
    expect((await json(response)).errors).toEqual([
      { field: 'spec.policies[0].params.gatewayHost', message: 'unknown parameter' },
      {
        field: 'spec.policies[0].params.issuers[0]',
        message: "no key manager named 'idp' is configured",
      },
    ]);
    const legacy = proxyDefinition('legacy-v1.0', '/legacy', upstream.mcpUrl);
    const spec = legacy.spec as Record<string, unknown>;
    delete spec.specVersions;
    spec.specVersion = '2025-06-18';
    expect((await fx.deploy(legacy)).status).toBe(201);
    const wrong = proxyDefinition('wrong-v1.0', '/wrong', upstream.mcpUrl);
    (wrong.spec as Record<string, unknown>).specVersion = '2024-01-01';
    expect((await fx.deploy(wrong)).status).toBe(400);
  });

  it('rejects bodies that are neither YAML nor JSON', async () => {
    const response = await fx.management(BASE, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"kind":',
    });
    expect(response.status).toBe(400);
    expect((await json(response)).status).toBe('error');
  });

  it('serves health on the plain listener and metrics on the management listener', async () => {
    const healthy = await fetch(`${fx.gateway.plainUrl}/_gateway-health/healthy`);
    expect(healthy.status).toBe(200);
    expect(await json(healthy)).toEqual({ status: 'healthy' });
    const ready = await fetch(`${fx.gateway.plainUrl}/_gateway-health/ready`);
    expect(await json(ready)).toEqual({ status: 'ready' });
    const metrics = await fetch(`${fx.gateway.managementUrl}/metrics`);
    expect(metrics.headers.get('content-type')).toContain('text/plain');
    expect(await metrics.text()).toContain('# TYPE mcp_gateway_requests_total counter');
  });

  it('keeps proxies across a restart and routes to them again', async () => {
    await fx.gateway.close();
    fx = await startTestGateway({ dataDir });
    const list = await json(await fx.management(BASE));
    expect(list.mcpProxies.map((p: { status: { id: string } }) => p.status.id).sort()).toEqual([
      'legacy-v1.0',
      'scim-v1.0',
    ]);
    const before = upstream.hits;
    const response = await fetch(`${fx.gateway.plainUrl}/scim/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(response.status).toBe(200);
    expect(upstream.hits).toBe(before + 1);

    // A policy added by PUT guards the very next request.
    const guarded = proxyDefinition('scim-v1.0', '/scim', upstream.mcpUrl, [
      { name: 'mcp-auth', version: 'v1', params: {} },
    ]);
    (guarded.spec as Record<string, unknown>).displayName = 'scim';
    const put = await fx.management(`${BASE}/scim-v1.0`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(guarded),
    });
    expect(put.status).toBe(200);
    const refused = await fetch(`${fx.gateway.plainUrl}/scim/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }),
    });
    expect(refused.status).toBe(401);
    expect(upstream.hits).toBe(before + 1);
  });
});

describe('generated admin password', () => {
  it('is created once, announced once and stored hashed', async () => {
    const dataDir = tempDir();
    const announced: Array<[string, string]> = [];
    const start = () =>
      startGateway({
        settings: {
          data_dir: dataDir,
          listeners: { host: '127.0.0.1', https_port: 0, http_port: 0, management_port: 0 },
        },
        logger: createLogger({ level: 'silent', pretty: false }),
        onGeneratedAdmin: (user, password) => announced.push([user, password]),
      });
    let gateway = await start();
    expect(announced).toHaveLength(1);
    const [user, password] = announced[0] as [string, string];
    const ok = await fetch(`${gateway.managementUrl}${BASE}`, {
      headers: { authorization: basic(user, password) },
    });
    expect(ok.status).toBe(200);
    await gateway.close();
    gateway = await start();
    expect(announced).toHaveLength(1);
    const again = await fetch(`${gateway.managementUrl}${BASE}`, {
      headers: { authorization: basic(user, password) },
    });
    expect(again.status).toBe(200);
    const wrong = await fetch(`${gateway.managementUrl}${BASE}`, {
      headers: { authorization: ADMIN },
    });
    expect(wrong.status).toBe(401);
    await gateway.close();
  });
});
