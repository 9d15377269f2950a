import { createServer } from 'node:net';
import {
  ClientIdMetadataError,
  ClientIdMetadataResolver,
  clientIdUrlProblem,
} from '@mcp-identity/common';
import { type ClientMetadataServer, startClientMetadataServer } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const document = (clientId: string, extra: Record<string, unknown> = {}) => ({
  client_id: clientId,
  client_name: 'Example Client',
  redirect_uris: ['http://127.0.0.1:33418/callback'],
  ...extra,
});

describe('client ID metadata documents (draft-ietf-oauth-client-id-metadata-document)', () => {
  let server: ClientMetadataServer;
  let now = 1_000_000;
  let resolver: ClientIdMetadataResolver;
  beforeAll(async () => {
    server = await startClientMetadataServer();
    // The test server is on loopback: the development allowance on, its CA trusted.
    resolver = new ClientIdMetadataResolver({
      allowPrivateAddresses: true,
      ca: server.ca,
      clock: () => now,
    });
  });
  afterAll(async () => {
    await resolver.close();
    await server.close();
  });

  const refusal = (promise: Promise<unknown>) =>
    promise.then(
      () => {
        throw new Error('resolved');
      },
      (error: unknown) => {
        expect(error).toBeInstanceOf(ClientIdMetadataError);
        return (error as Error).message;
      },
    );

  /** Resolves `url` now, a second before `lifetimeMs` and a second after: fetched once, then again. */
  const expectCachedFor = async (url: string, lifetimeMs: number) => {
    const path = new URL(url).pathname;
    await resolver.resolve(url);
    now += lifetimeMs - 1_000;
    await resolver.resolve(url);
    expect(server.requests(path)).toBe(1);
    now += 2_000;
    await resolver.resolve(url);
    expect(server.requests(path)).toBe(2);
  };

  it('fetches, validates and caches a document within its max-age, clamped to bounds', async () => {
    const url = `${server.origin}/ok.json`;
    server.serve('/ok.json', {
      body: document(url, { scope: 'mcp:tools' }),
      headers: { 'cache-control': 'max-age=120' },
    });
    const resolved = await resolver.resolve(url);
    expect(resolved).toMatchObject({
      clientId: url,
      host: new URL(url).host,
      clientName: 'Example Client',
      redirectUris: ['http://127.0.0.1:33418/callback'],
      scope: 'mcp:tools',
    });
    await expectCachedFor(url, 120_000);
  });

  it('keeps a no-store document for the minimum time all the same (a bound on refetches)', async () => {
    const url = `${server.origin}/no-store.json`;
    server.serve('/no-store.json', {
      body: document(url),
      headers: { 'cache-control': 'no-store' },
    });
    await expectCachedFor(url, 60_000);
  });

  it('shares one fetch between concurrent requests for a document', async () => {
    const url = `${server.origin}/concurrent.json`;
    server.serve('/concurrent.json', { body: document(url) });
    await Promise.all([resolver.resolve(url), resolver.resolve(url), resolver.resolve(url)]);
    expect(server.requests('/concurrent.json')).toBe(1);
  });

  it('refuses a document whose client_id is not its URL', async () => {
    const url = `${server.origin}/mismatch.json`;
    server.serve('/mismatch.json', { body: document('https://other.example/client.json') });
    expect(await refusal(resolver.resolve(url))).toMatch(/names another client_id/);
  });

  it('refuses an oversized document, declared or streamed', async () => {
    const url = `${server.origin}/big.json`;
    server.serve('/big.json', { body: document(url, { padding: 'x'.repeat(6_000) }) });
    expect(await refusal(resolver.resolve(url))).toMatch(/larger than 5120 bytes/);
  });

  it('refuses an unreachable document', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as { port: number };
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    expect(await refusal(resolver.resolve(`https://127.0.0.1:${port}/gone.json`))).toMatch(
      /could not be fetched \(ECONNREFUSED\)/,
    );
  });

  it('does not follow a redirect, and wants JSON', async () => {
    const url = `${server.origin}/moved.json`;
    server.serve('/moved.json', {
      status: 302,
      headers: { location: `${server.origin}/ok.json` },
      body: '',
    });
    expect(await refusal(resolver.resolve(url))).toMatch(/redirect \(302\)/);
    const html = `${server.origin}/page.json`;
    server.serve('/page.json', { headers: { 'content-type': 'text/html' }, body: document(html) });
    expect(await refusal(resolver.resolve(html))).toMatch(/not application\/json/);
  });

  it('refuses secrets, confidential authentication and refused redirect URIs', async () => {
    for (const [path, extra, reason] of [
      ['/secret.json', { client_secret: 's' }, /client secret/],
      ['/jwt.json', { token_endpoint_auth_method: 'private_key_jwt' }, /only none/],
      ['/js.json', { redirect_uris: ['javascript:alert(1)'] }, /refused redirect URI/],
      ['/implicit.json', { response_types: ['token'] }, /response type code/],
    ] as const) {
      const url = `${server.origin}${path}`;
      server.serve(path, { body: document(url, extra) });
      expect(await refusal(resolver.resolve(url))).toMatch(reason);
    }
  });

  it('refuses non-public addresses unless the development allowance is on', async () => {
    const strict = new ClientIdMetadataResolver({ ca: server.ca });
    try {
      const port = new URL(server.origin).port;
      const byName = `https://localhost:${port}/ok.json`;
      server.serve('/ok.json', { body: document(byName) });
      const before = server.requests('/ok.json');
      expect(await refusal(strict.resolve(byName))).toMatch(/localhost has no public address/);
      expect(await refusal(strict.resolve(`${server.origin}/ok.json`))).toMatch(
        /non-public address \(127\.0\.0\.1\)/,
      );
      expect(await refusal(strict.resolve(`https://[::ffff:7f00:1]:${port}/ok.json`))).toMatch(
        /non-public address/,
      );
      expect(server.requests('/ok.json')).toBe(before);
    } finally {
      await strict.close();
    }
  });

  it('takes only normal https URLs with a path as client IDs', () => {
    expect(clientIdUrlProblem('https://app.example/client.json')).toBeUndefined();
    expect(clientIdUrlProblem('http://app.example/client.json')).toMatch(/https/);
    expect(clientIdUrlProblem('https://app.example')).toMatch(/no path/);
    expect(clientIdUrlProblem('https://app.example/a/../client.json')).toMatch(/dot segments/);
    expect(clientIdUrlProblem('https://u:p@app.example/client.json')).toMatch(/user information/);
    expect(clientIdUrlProblem('https://app.example/client.json#x')).toMatch(/fragment/);
    expect(clientIdUrlProblem('https://APP.example/client.json')).toMatch(/normal form/);
  });
});
