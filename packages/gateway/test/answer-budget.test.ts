import { useTempDir } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FILTERING_POLICIES, proxyDefinition } from './fixtures/gateway.js';
import {
  type GatewayProcess,
  startGatewayProcess,
  writeGatewayConfig,
} from './fixtures/gateway-process.js';
import { type KeyManager, startKeyManager } from './fixtures/key-manager.js';
import { MCP_POST_HEADERS } from './fixtures/mcp-client.js';
import { type RawUpstream, startRawUpstream } from './fixtures/raw-upstream.js';

const tempDir = useTempDir('gw-answers-');
const MiB = 1024 * 1024;
/** Two 15 MB lists at once, each counted `LIST_WORKING_COPIES` (4) times over. */
const BUDGET = 128 * MiB;
/**
 * Growth allowed beyond the budget: the V8 heap's slack (garbage of finished lists not yet
 * collected) and the code the load runs for the first time. Measured 111–129 MB above the
 * baseline in all; the gateway before the budget grew by 827 MB.
 */
const ALLOWANCE = 48 * MiB;
const CONCURRENT = 60;

/** A `tools/list` result of about 15 MB: 5,000 tools with long descriptions, `delete_user` among them. */
function hugeToolList(): Buffer {
  const description = 'Manages identities in the directory. '.repeat(80);
  const tools = Array.from({ length: 5_000 }, (_, i) => ({
    name: i === 2_500 ? 'delete_user' : `tool_${i}`,
    description,
    inputSchema: { type: 'object', properties: { id: { type: 'string' } } },
  }));
  return Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { tools } }));
}

interface Answer {
  status: number;
  retryAfter: string | null;
  body: string;
}

async function listTools(url: string, token: string, id: number): Promise<Answer> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { ...MCP_POST_HEADERS, authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/list' }),
  });
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    body: await response.text(),
  };
}

describe('the buffered-answer budget, against a gateway child process', () => {
  let km: KeyManager;
  let upstream: RawUpstream;
  let gateway: GatewayProcess;
  const list = hugeToolList();

  beforeAll(async () => {
    expect(list.length).toBeGreaterThan(14 * MiB);
    expect(list.length).toBeLessThan(16 * MiB);
    km = await startKeyManager();
    upstream = await startRawUpstream((_path, body, res) => {
      const { method } = JSON.parse(body || '{}');
      const answer =
        method === 'tools/list' ? list : Buffer.from('{"jsonrpc":"2.0","id":1,"result":{}}');
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': answer.length });
      res.end(answer);
    });
    const config = await writeGatewayConfig(tempDir(), {
      keyManager: km,
      limits: { max_buffered_answer_bytes: BUDGET },
    });
    gateway = await startGatewayProcess(config);
    const deployed = await gateway.deploy(
      proxyDefinition('lists-v1.0', '/lists', `${upstream.url}/mcp`, FILTERING_POLICIES),
    );
    expect(deployed.status).toBe(201);
  });
  afterAll(async () => {
    await gateway?.stop();
    await Promise.all([upstream?.close(), km?.stop()]);
  });

  it(`filters ${CONCURRENT} concurrent 15 MB lists within its budget, refusing the excess 503`, async () => {
    const url = `${gateway.plainUrl}/lists/mcp`;
    const token = await km.sign({ scope: 'internal_user_mgt_list' });
    const check = (answer: Answer) => {
      const { result } = JSON.parse(answer.body);
      expect(result.tools).toHaveLength(4_999);
      expect(answer.body).not.toContain('"delete_user"');
    };
    // Warm the path (one list filtered), then take the idle baseline.
    const warm = await listTools(url, token, 0);
    expect(warm.status).toBe(200);
    check(warm);
    const baseline = gateway.rss();

    const answers = await Promise.all(
      Array.from({ length: CONCURRENT }, (_, i) => listTools(url, token, i + 1)),
    );
    const peak = gateway.peakRss();
    expect(peak - baseline).toBeLessThan(BUDGET + ALLOWANCE);
    const served = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 503);
    expect(served.length + refused.length).toBe(CONCURRENT);
    expect(served.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    for (const answer of served) check(answer);
    for (const answer of refused) {
      expect(answer.retryAfter).toBe('1');
      expect(JSON.parse(answer.body)).toMatchObject({
        jsonrpc: '2.0',
        error: {
          code: -32000,
          message: 'The gateway is filtering too many list results at once; retry shortly',
        },
      });
    }

    // Each refusal is in the audit log beside the upstream's own answer, and every byte held
    // was given back once the answers were out.
    const auditOf = () =>
      gateway
        .output()
        .split('\n')
        .filter((line) => line.includes('"msg":"mcp request"'))
        .map((line) => JSON.parse(line).audit);
    await expect
      .poll(() => auditOf().filter((a) => a.upstreamFailure === 'answer_budget').length)
      .toBe(refused.length);
    for (const line of auditOf().filter((a) => a.upstreamFailure === 'answer_budget')) {
      expect(line).toMatchObject({ decision: 'unavailable', upstreamStatus: 200 });
    }
    await expect
      .poll(async () => (await gateway.management('/metrics')).text())
      .toMatch(/^mcp_gateway_buffered_answer_bytes 0$/m);
  }, 60_000);
});
