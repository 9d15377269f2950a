import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createLogger, REDACTED, recordLineWriter, redactUrl } from '@mcp-identity/common';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';

function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const logger = createLogger({ name: 'test', level: 'debug', pretty: false, destination });
  return { logger, lines };
}

const BEARER = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.c2lnbmF0dXJl';

describe('createLogger', () => {
  it('writes JSON lines carrying the service name', () => {
    const { logger, lines } = capture();
    logger.info({ port: 5000 }, 'started');
    const line = JSON.parse(lines[0] ?? '{}');
    expect(line).toMatchObject({ name: 'test', msg: 'started', port: 5000, level: 30 });
  });

  it('removes a bearer token, a password and a client secret at any depth', () => {
    const { logger, lines } = capture();
    logger.info(
      {
        request: {
          headers: {
            Authorization: `Bearer ${BEARER}`,
            cookie: 'sid=abc123',
            'set-cookie': ['a=b'],
          },
          body: { email: 'ann@example.com', password: 'hunter2-Secret!' },
        },
        app: {
          client_id: 'app-1',
          clientSecret: 'cs-9f8e7d6c5b4a',
          nested: [{ refresh_token: 'rt-zzz' }],
        },
        form: { code: 'Yx7-oauth-code-value', code_verifier: 'verifier-abc' },
        accessToken: BEARER,
      },
      'login',
    );
    const text = lines.join('\n');
    for (const secret of [
      BEARER,
      'sid=abc123',
      'hunter2-Secret!',
      'cs-9f8e7d6c5b4a',
      'rt-zzz',
      'Yx7-oauth-code-value',
      'verifier-abc',
    ]) {
      expect(text).not.toContain(secret);
    }
    const line = JSON.parse(lines[0] ?? '{}');
    expect(line.request.headers.Authorization).toBe(REDACTED);
    expect(line.request.body).toEqual({ email: 'ann@example.com', password: REDACTED });
    expect(line.app.client_id).toBe('app-1');
    expect(line.app.nested[0].refresh_token).toBe(REDACTED);
  });

  it('keeps error codes and messages but not secrets attached to errors', () => {
    const { logger, lines } = capture();
    const error = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9443'), {
      code: 'ECONNREFUSED',
      token: BEARER,
    });
    logger.error({ err: error }, 'token request failed');
    const line = JSON.parse(lines[0] ?? '{}');
    expect(line.err.code).toBe('ECONNREFUSED');
    expect(line.err.message).toBe('connect ECONNREFUSED 127.0.0.1:9443');
    expect(line.err.token).toBe(REDACTED);
    expect(lines.join('\n')).not.toContain(BEARER);
  });

  it('removes credentials from flat objects, every time the same keys come back', () => {
    const { logger, lines } = capture();
    for (const attempt of [1, 2]) {
      logger.info(
        { attempt, clientId: 'app-1', client_secret: `cs-${attempt}`, Token: BEARER, code: 'ab-1' },
        'flat',
      );
      logger.info({ attempt, code: 'ECONNREFUSED', when: new Date(0) }, 'diagnostic');
    }
    for (const text of [lines[0], lines[2]]) {
      const line = JSON.parse(text ?? '{}');
      expect(line).toMatchObject({
        clientId: 'app-1',
        client_secret: REDACTED,
        Token: REDACTED,
        code: REDACTED,
      });
    }
    for (const text of [lines[1], lines[3]]) {
      expect(JSON.parse(text ?? '{}')).toMatchObject({
        code: 'ECONNREFUSED',
        when: '1970-01-01T00:00:00.000Z',
      });
    }
    expect(lines.join('\n')).not.toMatch(/cs-[12]|ab-1/);
    expect(lines.join('\n')).not.toContain(BEARER);
  });

  it('strips credential query parameters from URLs', () => {
    expect(redactUrl('/cb?code=abc&state=xyz')).toBe(
      `/cb?code=${encodeURIComponent(REDACTED)}&state=xyz`,
    );
    expect(redactUrl('/plain?a=1')).toBe('/plain?a=1');
  });
});

describe('recordLineWriter', () => {
  class Record {
    readonly proxy: string;
    tool: string | undefined = undefined;
    scopes: readonly string[] | undefined = undefined;
    latencyMs = 0.25;
    constructor(proxy: string) {
      this.proxy = proxy;
    }
  }
  const withoutTime = (line: string) => line.replace(/"time":\d+/, '"time":0');

  it('writes, byte for byte, the line logger.info writes for the same record', () => {
    const { logger, lines } = capture();
    const child = logger.child({ component: 'audit' }, { msgPrefix: '[a] ' });
    const write = recordLineWriter<Record>(child, 'audit', 'mcp "request"\n');
    const records = [new Record('p'), new Record('ü "quoted" \\ \u2028')];
    (records[1] as Record).tool = 'search_users';
    (records[1] as Record).scopes = ['a', 'b'];
    for (const record of records) {
      child.info({ audit: record }, 'mcp "request"\n');
      write(record);
    }
    expect(lines).toHaveLength(4);
    expect(withoutTime(lines[1] as string)).toBe(withoutTime(lines[0] as string));
    expect(withoutTime(lines[3] as string)).toBe(withoutTime(lines[2] as string));
    expect(JSON.parse(lines[3] as string)).toMatchObject({
      component: 'audit',
      audit: { proxy: 'ü "quoted" \\ \u2028', tool: 'search_users', scopes: ['a', 'b'] },
      msg: '[a] mcp "request"\n',
    });
  });

  it("writes nothing while info is below the logger's level", () => {
    const { logger, lines } = capture();
    const write = recordLineWriter<Record>(logger, 'audit', 'mcp request');
    logger.level = 'warn';
    write(new Record('p'));
    expect(lines).toEqual([]);
    logger.level = 'info';
    write(new Record('p'));
    expect(lines).toHaveLength(1);
  });

  it('refuses a logger whose lines it could not reproduce', () => {
    const { logger } = capture();
    const mixed = pino({ mixin: () => ({ extra: 1 }) }, new Writable({ write: () => undefined }));
    expect(() => recordLineWriter(mixed, 'audit', 'x')).toThrow(/cannot reproduce/);
    const serialized = logger.child({}, { serializers: { audit: () => 'x' } });
    expect(() => recordLineWriter(serialized, 'audit', 'x')).toThrow(/cannot reproduce/);
  });
});

describe('batchedStdout', () => {
  const fixture = join(import.meta.dirname, 'fixtures/batched-stdout-cli.ts');

  /** Runs `use` with a file holding these lines as JSON, for the fixture to read. */
  async function withLinesFile<T>(lines: string[], use: (file: string) => T | Promise<T>) {
    const dir = mkdtempSync(join(tmpdir(), 'batched-stdout-'));
    try {
      const file = join(dir, 'lines.json');
      writeFileSync(file, JSON.stringify(lines));
      return await use(file);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  /** Runs the fixture on these lines and returns what reached its standard output. */
  function written(lines: string[], ending: 'signal' | 'drain'): Promise<Buffer> {
    return withLinesFile(lines, (file) => {
      const result = spawnSync(process.execPath, ['--import', 'tsx', fixture, file, ending], {
        maxBuffer: 64 << 20,
      });
      expect(result.status).toBe(0);
      return result.stdout;
    });
  }

  // Multi-byte characters (two- and four-byte UTF-8) at every batch boundary, and lines longer
  // than a batch.
  const lines = Array.from({ length: 3_000 }, (_, i) =>
    i % 997 === 0 ? `${'é💥'.repeat(40_000 + i)}\n` : `line ${i} é 💥 ${'x'.repeat(i % 301)}\n`,
  );

  it('writes every line, in order and byte for byte, when the event loop runs out', async () => {
    expect((await written(lines, 'drain')).equals(Buffer.from(lines.join('')))).toBe(true);
  });

  it('writes every line before a graceful shutdown exits, though a write is under way', async () => {
    expect((await written(lines, 'signal')).equals(Buffer.from(lines.join('')))).toBe(true);
  });

  it('lets a graceful shutdown exit 0 when standard output has lost its reader', async () => {
    const code = await withLinesFile(lines, async (file) => {
      const child = spawn(process.execPath, ['--import', 'tsx', fixture, file, 'signal'], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      // The reader goes away: the log's writes fail with EPIPE and nothing more gets out.
      child.stdout.destroy();
      const [exitCode] = (await once(child, 'exit')) as [number | null];
      return exitCode;
    });
    expect(code).toBe(0);
  });
});
