import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureSelfSignedCertificate, hashSecret } from '@mcp-identity/common';
import {
  describeRequiring,
  findExecutable,
  nginxMissing,
  useTempDir,
} from '@mcp-identity/common/testing';
import { describe, expect, it } from 'vitest';
import { GATEWAY_BIN } from './fixtures/gateway-process.js';

const DEPLOY_GUIDE = fileURLToPath(new URL('../../../docs/deploy.md', import.meta.url));
const tempDir = useTempDir('gw-deploy-docs-');
/** The marker a fragment's first line carries when it belongs inside nginx.conf's `http { }`. */
const INSIDE_HTTP = /^# inside http \{ \}/;

/** Every ```nginx block of the guide, in order. */
function nginxBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```nginx\n([\s\S]*?)^```$/gm)].map((match) => match[1] as string);
}

/**
 * A complete nginx.conf around a block, as the guide says to place it: a fragment marked as
 * inside `http { }` gets that block and the minimal top level (events, a pid and temp paths in
 * the prefix, so no root is needed); any other block is taken as a whole nginx.conf.
 */
function wrap(block: string, dir: string): string {
  if (!INSIDE_HTTP.test(block)) return block;
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']
    .map((name) => `  ${name}_temp_path ${join(dir, 'temp', name)};`)
    .join('\n');
  return `pid ${join(dir, 'nginx.pid')};\nevents {}\nhttp {\n  access_log off;\n${temp}\n${block}}\n`;
}

describeRequiring('the nginx configuration in docs/deploy.md', nginxMissing(), () => {
  const blocks = nginxBlocks(readFileSync(DEPLOY_GUIDE, 'utf8'));

  it('has nginx blocks to check', () => {
    expect(blocks.length).toBeGreaterThan(0);
  });

  it.each(blocks.map((block, i) => [i + 1, block]))(
    'block %i passes nginx -t',
    async (_i, block) => {
      const dir = tempDir();
      mkdirSync(join(dir, 'temp'));
      // The certificate the block names, relative to nginx.conf's directory.
      const tls = await ensureSelfSignedCertificate(join(dir, 'scratch'));
      mkdirSync(join(dir, 'tls'));
      writeFileSync(join(dir, 'tls', 'mcp.example.com.crt'), tls.cert);
      writeFileSync(join(dir, 'tls', 'mcp.example.com.key'), tls.key);
      const file = join(dir, 'nginx.conf');
      writeFileSync(file, wrap(block as string, dir));
      const result = spawnSync(
        findExecutable('nginx') as string,
        ['-t', '-p', dir, '-c', file, '-e', 'stderr'],
        { encoding: 'utf8', timeout: 15_000 },
      );
      expect(result.stderr).toContain('test is successful');
      expect(result.status).toBe(0);
    },
  );

  it('forwards the Host the client sent, port included', () => {
    for (const block of blocks) {
      for (const [, value] of block.matchAll(/proxy_set_header\s+Host\s+(\S+);/g)) {
        expect(value).toBe('$http_host');
      }
    }
  });
});

describe('the gateway.toml of docs/deploy.md', () => {
  const [toml] = [
    ...readFileSync(DEPLOY_GUIDE, 'utf8').matchAll(/^```toml\n([\s\S]*?)^```$/gm),
  ].map((match) => match[1] as string);

  /** `mcp-identity-gateway validate` on a file of this text. */
  const validate = (text: string) => {
    const file = join(tempDir(), 'gateway.toml');
    writeFileSync(file, text);
    const { PATH, HOME } = process.env;
    return spawnSync(process.execPath, [GATEWAY_BIN, 'validate', '--config', file], {
      encoding: 'utf8',
      env: { PATH, HOME },
      timeout: 20_000,
    });
  };

  it('is refused as written for its placeholder hash alone, and valid with a real one', async () => {
    expect(toml).toContain('password_hash = "scrypt$..."');
    const asWritten = validate(toml as string);
    expect(asWritten.status).toBe(2);
    const problems = asWritten.stderr.split('\n').filter((line) => line.startsWith('  - '));
    expect(problems).toEqual([
      expect.stringMatching(/^ {2}- management\.users\[0\]\.password_hash \(file /),
    ]);
    const hash = await hashSecret('a real password');
    const completed = validate((toml as string).replace('scrypt$...', hash));
    expect(completed.stderr).toBe('');
    expect(completed.status).toBe(0);
  });
});
