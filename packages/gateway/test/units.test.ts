import { seededRandom } from '@mcp-identity/common/testing';
import { parseMcpBody } from '@mcp-identity/gateway';
import { describe, expect, it } from 'vitest';
import { SseListFilter } from '../src/data-plane/list-filter.js';
import { AuditRecord, auditRecordJson } from '../src/data-plane/pipeline.js';
import { GatewayMetrics } from '../src/metrics.js';

describe('parseMcpBody', () => {
  it('sees through escaped duplicate member names', () => {
    const body = '{"jsonrpc":"2.0","id":1,"method":"tools/list","\\u006dethod":"tools/call"}';
    expect(parseMcpBody(body)).toMatchObject({ ok: false, code: -32600 });
  });

  it('sees duplicated params members written with escapes or whitespace before the colon', () => {
    const escaped =
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","n\\u0061me":"b"}}';
    expect(parseMcpBody(escaped)).toMatchObject({ ok: false, code: -32600 });
    const spaced =
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name" \r\n\t:"a","NAME":"b"}}';
    expect(parseMcpBody(spaced)).toMatchObject({ ok: false, code: -32600 });
    const single = '{"jsonrpc":"2.0","id":1,"method" :"tools/call","params" : {"name" : "a\\"b"}}';
    expect(parseMcpBody(single)).toMatchObject({ ok: true, call: { target: 'a"b' } });
  });

  it('ignores look-alike keys nested deeper than params', () => {
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 'a',
      method: 'tools/call',
      params: { name: 'search_users', arguments: { name: 'x', method: 'y', Name: 'z' } },
    });
    const parsed = parseMcpBody(body);
    expect(parsed).toMatchObject({
      ok: true,
      call: { id: 'a', method: 'tools/call', target: 'search_users' },
    });
    expect(parsed.ok && parsed.call.params).toEqual({
      name: 'search_users',
      arguments: { name: 'x', method: 'y', Name: 'z' },
    });
  });

  it('accepts client replies to server requests and notifications', () => {
    expect(parseMcpBody('{"jsonrpc":"2.0","id":4,"result":{}}')).toMatchObject({
      ok: true,
      call: { method: '' },
    });
    expect(parseMcpBody('{"jsonrpc":"2.0","method":"notifications/initialized"}')).toMatchObject({
      ok: true,
      call: { id: null, method: 'notifications/initialized' },
    });
  });

  it('refuses exactly the member names that lower-case to a duplicated member name', () => {
    const spellings = ['NAME', 'Name', 'nAmE', 'name', 'nam', 'names', 'n\u0061me'];
    const lookAlikes = ['\uff4eame', '\u0144ame', 'n\u00e1me', 'na\u212ae', 'n@me', 'N`ME'];
    for (const key of [...spellings, ...lookAlikes]) {
      const decoded = JSON.parse(`"${key}"`) as string;
      const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","${key}":"b"}}`;
      const duplicated = decoded.toLowerCase() === 'name';
      expect(parseMcpBody(body).ok, key).toBe(!duplicated);
    }
    for (const key of ['ID', 'Id', '\u0130d', '\u0131d', 'i\u0307d']) {
      const body = `{"jsonrpc":"2.0","id":1,"${key}":2,"method":"ping"}`;
      const duplicated = (JSON.parse(`"${key}"`) as string).toLowerCase() === 'id';
      expect(parseMcpBody(body).ok, key).toBe(!duplicated);
    }
  });

  it('accepts nesting as deep as JSON.parse does, within the body size limit', () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","x":${deep}}}`;
    expect(JSON.parse(body)).toBeTruthy();
    expect(parseMcpBody(body)).toMatchObject({ ok: true, call: { target: 'a' } });
    expect(parseMcpBody(`${body.slice(0, -3)}}}`)).toMatchObject({ ok: false, code: -32700 });
  });

  it('rejects wrong shapes', () => {
    for (const body of [
      'null',
      '"x"',
      '{"jsonrpc":"1.0","method":"a"}',
      '{"jsonrpc":"2.0","method":"a","params":[1]}',
      '{"jsonrpc":"2.0","id":{},"method":"a"}',
    ]) {
      expect(parseMcpBody(body)).toMatchObject({ ok: false, code: -32600 });
    }
  });
});

describe('auditRecordJson', () => {
  it('writes a record as JSON.stringify does, for any strings and numbers', () => {
    const next = seededRandom(42);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
    const strings = [
      '',
      'tools/call',
      'bench-v1.0',
      'say "hi" \\ there',
      'line\nbreak\ttab\u0001\u001f',
      'lone \ud800 surrogate \udfff',
      'pair 💥 and \u2028 \u2029',
      'é'.repeat(100),
      'x'.repeat(129),
      '"'.repeat(200),
    ];
    const numbers = [0, -0, 1.5, 0.01, 12345.67, 1e21, Number.NaN, Number.POSITIVE_INFINITY];
    for (let round = 0; round < 2_000; round++) {
      const record = new AuditRecord(
        pick(strings),
        pick(strings),
        pick(strings),
        pick(['allowed', 'forbidden'] as const),
        pick(numbers),
      );
      if (next() < 0.5) record.tool = pick(strings);
      if (next() < 0.5) record.subject = pick(strings);
      if (next() < 0.5) record.clientId = pick(strings);
      if (next() < 0.5) record.reason = pick(strings);
      if (next() < 0.3) record.missingScopes = [pick(strings), pick(strings)];
      if (next() < 0.5) record.upstreamStatus = pick([200, 502, Number.NaN]);
      if (next() < 0.3) record.exchangedJti = pick(strings);
      if (next() < 0.3) record.exchangeFailure = pick(strings);
      expect(auditRecordJson(record)).toBe(JSON.stringify(record));
    }
  });
});

describe('SseListFilter', () => {
  async function run(input: string, chunkSize: number): Promise<string> {
    const filter = new SseListFilter({
      key: 'tools',
      keep: (item) => (item as { name?: string }).name !== 'secret',
      privateScope: false,
    });
    const out: string[] = [];
    filter.on('data', (chunk: Buffer) => out.push(chunk.toString('utf8')));
    const done = new Promise((resolve) => filter.on('end', resolve));
    const bytes = Buffer.from(input);
    for (let i = 0; i < bytes.length; i += chunkSize)
      filter.write(bytes.subarray(i, i + chunkSize));
    filter.end();
    await done;
    return out.join('');
  }

  const list = { jsonrpc: '2.0', id: 1, result: { tools: [{ name: 'open' }, { name: 'secret' }] } };
  const stream =
    `event: message\nid: 7\ndata: ${JSON.stringify(list)}\n\n` +
    'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n';

  it.each([1, 3, 64, 10_000])('filters list results split into %i-byte chunks', async (size) => {
    const output = await run(stream, size);
    expect(output).toContain('id: 7\n');
    expect(output).toContain('"name":"open"');
    expect(output).not.toContain('secret');
    expect(output).toContain('notifications/progress');
  });

  it('keeps the fields, comments and data of other events, written with LF', async () => {
    const other =
      'event: message\r\nid: 8\r\ndata: {"jsonrpc":"2.0","id":2,"result":{"content":[]}}\r\n\r\n: keep-alive\r\n\r\nretry: 500\r\n\r\n';
    expect(await run(other, 5)).toBe(
      'id: 8\nevent: message\ndata: {"jsonrpc":"2.0","id":2,"result":{"content":[]}}\n\n: keep-alive\nretry: 500\n',
    );
  });
});

describe('GatewayMetrics', () => {
  it('renders request counters per label set and cumulative latency buckets', async () => {
    const metrics = new GatewayMetrics();
    metrics.record('p"1', 'tools/call', 'allowed', 0.0004);
    metrics.record('p"1', 'tools/call', 'allowed', 0.003);
    metrics.record('p"1', 'x-custom', 'forbidden', 20);
    const text = await metrics.render();
    expect(text).toContain(
      'mcp_gateway_requests_total{proxy="p\\"1",method="tools/call",decision="allowed"} 2\n',
    );
    expect(text).toContain(
      'mcp_gateway_requests_total{proxy="p\\"1",method="other",decision="forbidden"} 1\n',
    );
    const bucket = (le: string) =>
      new RegExp(`_bucket\\{proxy="p\\\\"1",le="${le}"\\} (\\d+)`).exec(text)?.[1];
    expect([
      bucket('0.001'),
      bucket('0.0025'),
      bucket('0.005'),
      bucket('10'),
      bucket('\\+Inf'),
    ]).toEqual(['1', '1', '2', '2', '3']);
    expect(text).toContain('mcp_gateway_request_duration_seconds_count{proxy="p\\"1"} 3\n');
  });
});
