import {
  type LoopbackClient,
  loopbackAddresses,
  loopbackClient,
} from '@mcp-identity/common/testing';
import { describe, expect, it } from 'vitest';
import {
  authorizeParams,
  getAuthorize,
  pkcePair,
  postLogin,
  REDIRECT_URI,
} from './fixtures/flow.js';
import { hostForSuite, startHost, withHost } from './fixtures/host.js';

function register(base: string, body?: string, contentType = 'application/json') {
  const init: RequestInit = { method: 'POST' };
  if (body !== undefined) init.body = body;
  init.headers = { 'content-type': contentType };
  return fetch(`${base}/oauth/register`, init);
}

describe('POST /oauth/register', () => {
  const host = hostForSuite({ limits: { registrationsPerIpPerHour: 1000 } });

  it('answers 200 with exactly the spec fields', async () => {
    const response = await register(host.url, JSON.stringify({ redirect_uris: [REDIRECT_URI] }));
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = (await response.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(
      [
        'client_id',
        'client_id_issued_at',
        'grant_types',
        'redirect_uris',
        'response_types',
        'token_endpoint_auth_method',
      ].sort(),
    );
    expect(body).toMatchObject({
      client_id_issued_at: Math.floor(host.clock.now / 1000),
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: [REDIRECT_URI],
    });
  });

  it('issues a client_id of 32 random bytes in Base64Url, different every time', async () => {
    const first = (await (await register(host.url, '{}')).json()) as { client_id: string };
    const second = (await (await register(host.url, '{}')).json()) as { client_id: string };
    expect(first.client_id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(first.client_id, 'base64url')).toHaveLength(32);
    expect(first.client_id).not.toBe(second.client_id);
  });

  it('registers without a body, with an empty redirect_uris array', async () => {
    const response = await fetch(`${host.url}/oauth/register`, { method: 'POST' });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { redirect_uris: unknown }).redirect_uris).toEqual([]);
  });

  it('ignores redirect_uris unless the content type contains application/json', async () => {
    const body = JSON.stringify({ redirect_uris: ['https://app.example/cb'] });
    const text = await register(host.url, body, 'text/plain');
    expect(((await text.json()) as { redirect_uris: unknown }).redirect_uris).toEqual([]);
    const json = await register(host.url, body, 'application/json; charset=utf-8');
    expect(((await json.json()) as { redirect_uris: unknown }).redirect_uris).toEqual([
      'https://app.example/cb',
    ]);
  });

  it('ignores redirect_uris that is not an array, and a body that is not JSON', async () => {
    const notArray = await register(
      host.url,
      JSON.stringify({ redirect_uris: 'https://a.example/cb' }),
    );
    expect(((await notArray.json()) as { redirect_uris: unknown }).redirect_uris).toEqual([]);
    const broken = await register(host.url, '{"redirect_uris": [');
    expect(broken.status).toBe(200);
    expect(((await broken.json()) as { redirect_uris: unknown }).redirect_uris).toEqual([]);
  });

  it('drops empty and null entries', async () => {
    const response = await register(
      host.url,
      JSON.stringify({ redirect_uris: ['', null, 'https://app.example/cb', null] }),
    );
    expect(((await response.json()) as { redirect_uris: unknown }).redirect_uris).toEqual([
      'https://app.example/cb',
    ]);
  });

  it('keeps redirect_uris and display metadata, and ignores every other client metadata field', async () => {
    const response = await register(
      host.url,
      JSON.stringify({
        redirect_uris: ['https://app.example/cb'],
        client_name: '<b>Evil</b>',
        token_endpoint_auth_method: 'client_secret_basic',
        grant_types: ['client_credentials'],
      }),
    );
    const body = (await response.json()) as Record<string, unknown>;
    expect(body.token_endpoint_auth_method).toBe('none');
    expect(body.grant_types).toEqual(['authorization_code', 'refresh_token']);
    // Kept verbatim (it is escaped where it is shown, on the login page).
    expect(body.client_name).toBe('<b>Evil</b>');
  });

  it('accepts https, loopback http and private-use scheme redirect URIs', async () => {
    const uris = [
      'https://app.example/cb',
      'http://localhost:3000/cb',
      'http://127.0.0.1/cb',
      'http://[::1]:8080/cb',
      'com.example.app:/oauth2redirect',
      // Cursor's: a one-word scheme whose authority is the reverse domain name.
      'cursor://anysphere.cursor-retrieval/oauth/callback',
    ];
    const response = await register(host.url, JSON.stringify({ redirect_uris: uris }));
    expect(response.status).toBe(200);
    expect(((await response.json()) as { redirect_uris: unknown }).redirect_uris).toEqual(uris);
  });

  for (const [label, uri] of [
    ['non-loopback http', 'http://app.example/cb'],
    ['javascript:', 'javascript:alert(1)'],
    [
      'javascript: with a reverse-domain authority',
      'javascript://anysphere.cursor-retrieval/%0Aalert(1)',
    ],
    ['a one-word scheme without a domain', 'myapp:/cb'],
    ['data:', 'data:text/html,hi'],
    ['a fragment', 'https://app.example/cb#frag'],
    ['a relative URI', '/cb'],
    ['a non-string entry', 42],
  ] as const) {
    it(`rejects ${label} with 400 invalid_redirect_uri`, async () => {
      const response = await register(
        host.url,
        JSON.stringify({ redirect_uris: ['https://ok.example/cb', uri] }),
      );
      expect(response.status).toBe(400);
      const body = (await response.json()) as { error: string; error_description: string };
      expect(body.error).toBe('invalid_redirect_uri');
      expect(body.error_description).toBeTruthy();
    });
  }

  it('rejects more than 10 redirect URIs', async () => {
    const uris = Array.from({ length: 11 }, (_, i) => `https://app.example/cb${i}`);
    const response = await register(host.url, JSON.stringify({ redirect_uris: uris }));
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toBe('invalid_redirect_uri');
  });

  it('expires a client after 24 hours: the authorize request for it then fails', async () => {
    await withHost({}, async (clientHost) => {
      const response = await register(
        clientHost.url,
        JSON.stringify({ redirect_uris: [REDIRECT_URI] }),
      );
      const { client_id } = (await response.json()) as { client_id: string };
      const { challenge } = pkcePair();
      clientHost.clock.advance(24 * 3_600_000 - 1000);
      const before = await getAuthorize(clientHost.url, authorizeParams(client_id, challenge));
      expect(before.response.status).toBe(200);
      clientHost.clock.advance(1000);
      const after = await getAuthorize(clientHost.url, authorizeParams(client_id, challenge));
      expect(after.response.status).toBe(400);
      expect(after.html).toContain('not registered or its registration has expired');
    });
  });
});

describe('registration limits', () => {
  it('refuses registrations beyond the per-IP rate limit with 429 and Retry-After', async () => {
    await withHost({ limits: { registrationsPerIpPerHour: 2 } }, async (host) => {
      expect((await register(host.url, '{}')).status).toBe(200);
      expect((await register(host.url, '{}')).status).toBe(200);
      const refused = await register(host.url, '{}');
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(((await refused.json()) as { error: string }).error).toBe('too_many_requests');
      host.clock.advance(3_600_000);
      expect((await register(host.url, '{}')).status).toBe(200);
    });
  });

  it('at the live-client cap, evicts the oldest never-used client; 503 only once every client was used', async () => {
    await withHost({ limits: { maxClients: 2 } }, async (host) => {
      const registered = async () => {
        const response = await register(
          host.url,
          JSON.stringify({ redirect_uris: [REDIRECT_URI] }),
        );
        expect(response.status).toBe(200);
        return ((await response.json()) as { client_id: string }).client_id;
      };
      const oldest = await registered();
      const signedIn = await registered();
      const { challenge } = pkcePair();
      const form = await getAuthorize(host.url, authorizeParams(signedIn, challenge));
      expect((await postLogin(host.url, form.fields)).status).toBe(303);
      // Full: the never-used client makes room; the one a user signed in through stays.
      const newest = await registered();
      const known = async (clientId: string) =>
        (await getAuthorize(host.url, authorizeParams(clientId, challenge))).response.status;
      expect([await known(oldest), await known(signedIn), await known(newest)]).toEqual([
        400, 200, 200,
      ]);
      const second = await getAuthorize(host.url, authorizeParams(newest, challenge));
      expect((await postLogin(host.url, second.fields)).status).toBe(303);
      // Every live client used: nothing may be evicted, so the registration is refused ...
      const refused = await register(host.url, '{}');
      expect(refused.status).toBe(503);
      expect(((await refused.json()) as { error_description: string }).error_description).toMatch(
        /too many registered clients/,
      );
      // ... until clients expire.
      host.clock.advance(24 * 3_600_000);
      expect((await register(host.url, '{}')).status).toBe(200);
    });
  });

  it('counts registrations per network as well as per address, and a flood from many networks evicts its own clients', async () => {
    const host = await startHost({
      limits: { maxClients: 4, registrationsPerIpPerHour: 2, registrationsPerNetworkPerHour: 3 },
    });
    const clients = [
      ...loopbackAddresses(2, { block: 80, sameNetwork: true }),
      ...loopbackAddresses(2, { block: 90 }),
      ...loopbackAddresses(1, { block: 99 }),
    ].map(loopbackClient);
    try {
      const [neighbour1, neighbour2, other1, other2, fresh] = clients as [
        LoopbackClient,
        LoopbackClient,
        LoopbackClient,
        LoopbackClient,
        LoopbackClient,
      ];
      const send = async (client: LoopbackClient) => {
        const response = await client.send(`${host.url}/oauth/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{}',
        });
        return {
          status: response.status,
          clientId: (JSON.parse(response.text) as { client_id?: string }).client_id,
        };
      };
      const flood = [];
      for (const client of [neighbour1, neighbour1, neighbour2, neighbour2, other1, other2]) {
        flood.push(await send(client));
      }
      // Two per address, three per network: the second neighbour's second is one too many.
      expect(flood.map((r) => r.status)).toEqual([200, 200, 200, 429, 200, 200]);
      const registered = await send(fresh);
      expect(registered.status).toBe(200);
      const known = async (clientId: string | undefined) =>
        (await getAuthorize(host.url, authorizeParams(clientId as string, pkcePair().challenge)))
          .response.status;
      const statuses = [];
      for (const r of [...flood.filter((r) => r.status === 200), registered]) {
        statuses.push(await known(r.clientId));
      }
      // The cap of 4 made room twice, each time in the network holding the most (the neighbours').
      expect(statuses).toEqual([400, 400, 200, 200, 200, 200]);
    } finally {
      for (const client of clients) client.close();
      await host.close();
    }
  });
});
