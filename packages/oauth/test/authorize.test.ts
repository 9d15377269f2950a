import {
  type LoopbackClient,
  loopbackAddresses,
  loopbackClient,
} from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  authorizeParams,
  getAuthorize,
  hiddenFields,
  pkcePair,
  postForm,
  postLogin,
  REDIRECT_URI,
  registerClient,
} from './fixtures/flow.js';
import type { TestHost } from './fixtures/host.js';
import { ALICE, BROKEN, hostForSuite, LOCKED, withHost } from './fixtures/host.js';

function expectSecurityHeaders(response: Response): void {
  expect(response.headers.get('content-type')).toContain('text/html');
  expect(response.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  expect(response.headers.get('x-frame-options')).toBe('DENY');
  expect(response.headers.get('referrer-policy')).toBe('no-referrer');
  expect(response.headers.get('cache-control')).toBe('no-store');
}

describe('GET /oauth/authorize', () => {
  const host = hostForSuite();
  let clientId: string;
  const { challenge } = pkcePair();
  beforeAll(async () => {
    clientId = await registerClient(host.url);
  });

  it('renders the login form with the client, the redirect host and the parameters', async () => {
    const { response, html, fields } = await getAuthorize(
      host.url,
      authorizeParams(clientId, challenge),
    );
    expect(response.status).toBe(200);
    expectSecurityHeaders(response);
    expect(html).toContain(`<code id="client-id">${clientId}</code>`);
    expect(html).toContain('<strong id="redirect-host">127.0.0.1:8976</strong>');
    expect(html).toMatch(/<input id="email" name="email" type="email"/);
    expect(html).toMatch(/<input id="password" name="password" type="password"/);
    expect(fields).toMatchObject(authorizeParams(clientId, challenge));
    expect(fields.csrf_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('accepts a registered loopback redirect URI on another port (RFC 8252)', async () => {
    const params = authorizeParams(clientId, challenge, {
      redirect_uri: 'http://127.0.0.1:50123/callback',
    });
    expect((await getAuthorize(host.url, params)).response.status).toBe(200);
  });

  it('lets a client registered without redirect URIs use loopback URIs only', async () => {
    const bare = await registerClient(host.url, []);
    const loopback = authorizeParams(bare, challenge, { redirect_uri: 'http://localhost:9/cb' });
    expect((await getAuthorize(host.url, loopback)).response.status).toBe(200);
    const remote = authorizeParams(bare, challenge, { redirect_uri: 'https://app.example/cb' });
    expect((await getAuthorize(host.url, remote)).response.status).toBe(400);
  });

  it('escapes a <script> in state inside the form', async () => {
    const state = '"><script>alert(1)</script>';
    const { response, html, fields } = await getAuthorize(
      host.url,
      authorizeParams(clientId, challenge, { state }),
    );
    expect(response.status).toBe(200);
    expect(html).not.toContain('<script>');
    expect(html).toContain('&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(fields.state).toBe(state);
  });

  const failures: Array<[string, Record<string, string | undefined>, RegExp]> = [
    ['client_id is missing', { client_id: undefined }, /client_id parameter is missing/],
    ['client_id is unknown', { client_id: 'nope' }, /not registered/],
    ['redirect_uri is missing', { redirect_uri: undefined }, /redirect_uri parameter is missing/],
    ['redirect_uri is not registered', { redirect_uri: 'https://evil.example/cb' }, /not allowed/],
    [
      'redirect_uri differs in path',
      { redirect_uri: 'http://127.0.0.1:8976/other' },
      /not allowed/,
    ],
    ['response_type is token', { response_type: 'token' }, /response_type must be code\./],
    ['response_type is missing', { response_type: undefined }, /response_type must be code\./],
    ['code_challenge is missing', { code_challenge: undefined }, /code_challenge parameter/],
    ['code_challenge_method is plain', { code_challenge_method: 'plain' }, /must be S256\./],
    ['code_challenge_method is missing', { code_challenge_method: undefined }, /must be S256\./],
    ['code_challenge is malformed', { code_challenge: 'short' }, /not a Base64Url/],
    ['state is missing', { state: undefined }, /state parameter is missing/],
  ];
  for (const [label, overrides, message] of failures) {
    it(`answers 400 without redirecting when ${label}`, async () => {
      const { response, html } = await getAuthorize(
        host.url,
        authorizeParams(clientId, challenge, overrides),
      );
      expect(response.status).toBe(400);
      expect(response.headers.get('location')).toBeNull();
      expectSecurityHeaders(response);
      expect(html).toMatch(message);
    });
  }

  it('redirects a foreign resource to the client as invalid_target, with state and iss (RFC 6749 §4.1.2.1)', async () => {
    const params = authorizeParams(clientId, challenge, {
      resource: 'https://other.example/mcp',
      state: 's-1',
    });
    const response = await fetch(`${host.url}/oauth/authorize?${new URLSearchParams(params)}`, {
      redirect: 'manual',
    });
    expect(response.status).toBe(303);
    const location = new URL(response.headers.get('location') ?? '');
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT_URI);
    expect(Object.fromEntries(location.searchParams)).toEqual({
      error: 'invalid_target',
      error_description: `The resource must be ${host.url}/mcp.`,
      state: 's-1',
      iss: host.url,
    });
  });

  it('answers 400 when a parameter is repeated', async () => {
    const query = new URLSearchParams(authorizeParams(clientId, challenge));
    query.append('state', 'second');
    const response = await fetch(`${host.url}/oauth/authorize?${query}`, { redirect: 'manual' });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('state must be given once');
  });
});

describe('POST /oauth/authorize', () => {
  const host = hostForSuite({ limits: { loginFailuresPerAccount: 3, loginFailuresPerIp: 6 } });
  let clientId: string;
  const { challenge } = pkcePair();
  beforeAll(async () => {
    clientId = await registerClient(host.url);
  });

  const form = async (overrides: Record<string, string | undefined> = {}) =>
    (await getAuthorize(host.url, authorizeParams(clientId, challenge, overrides))).fields;

  it('redirects with 303 to the redirect URI with code, unchanged state and iss', async () => {
    const state = 'a b&c=d/é<script>';
    const response = await postLogin(host.url, await form({ state }));
    expect(response.status).toBe(303);
    const location = new URL(response.headers.get('location') ?? '');
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT_URI);
    expect(location.searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(location.searchParams.get('state')).toBe(state);
    expect(location.searchParams.get('iss')).toBe(host.url);
    expect(host.loginCalls.at(-1)).toEqual({ email: ALICE.email, password: ALICE.password });
  });

  it('re-checks the authorize parameters: a tampered response_type answers 400', async () => {
    const fields = await form();
    const response = await postLogin(host.url, { ...fields, response_type: 'token' });
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
  });

  it('re-checks the authorize parameters: a tampered redirect_uri answers 400', async () => {
    const fields = await form();
    const response = await postLogin(host.url, {
      ...fields,
      redirect_uri: 'https://evil.example/',
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
  });

  it('re-renders the form with an error when the password is wrong, keeping the e-mail', async () => {
    const response = await postLogin(host.url, await form(), {
      email: 'someone@example.com',
      password: 'wrong',
    });
    expect(response.status).toBe(200);
    expectSecurityHeaders(response);
    const html = await response.text();
    expect(html).toContain('The e-mail address or password is incorrect.');
    expect(html).toContain('value="someone@example.com"');
    expect(html).not.toContain('value="wrong"');
    expect(hiddenFields(html).csrf_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('derives the error from the login result: a locked account says so', async () => {
    const response = await postLogin(host.url, await form(), LOCKED);
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('This account is locked.');
  });

  it('re-renders the form with 503 when the login hook fails, without details', async () => {
    const response = await postLogin(host.url, await form(), BROKEN);
    expect(response.status).toBe(503);
    const html = await response.text();
    expect(html).toContain('Sign-in is temporarily unavailable.');
    expect(html).not.toContain('account store unavailable');
  });

  it('answers a malformed form body with a 400 HTML page', async () => {
    const response = await fetch(`${host.url}/oauth/authorize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{not json',
      redirect: 'manual',
    });
    expect(response.status).toBe(400);
    expectSecurityHeaders(response);
    expect(await response.text()).toContain('The request is malformed.');
  });

  it('lets the re-rendered form be submitted again successfully', async () => {
    const failed = await postLogin(host.url, await form(), {
      email: 'x@example.com',
      password: 'no',
    });
    const retry = await postLogin(host.url, hiddenFields(await failed.text()));
    expect(retry.status).toBe(303);
  });

  it('refuses a submission without the CSRF token', async () => {
    const { csrf_token: _dropped, ...fields } = await form();
    const calls = host.loginCalls.length;
    const response = await postLogin(host.url, fields);
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
    expect(await response.text()).toContain('expired or was already submitted');
    expect(host.loginCalls.length).toBe(calls);
  });

  it('refuses a replayed CSRF token', async () => {
    const fields = await form();
    expect((await postLogin(host.url, fields)).status).toBe(303);
    const replay = await postLogin(host.url, fields);
    expect(replay.status).toBe(400);
    expect(replay.headers.get('location')).toBeNull();
  });

  it('refuses a CSRF token issued for other parameters', async () => {
    const fields = await form({ state: 'first' });
    const response = await postLogin(host.url, { ...fields, state: 'second' });
    expect(response.status).toBe(400);
  });

  it('refuses a CSRF token older than the transaction lifetime', async () => {
    const fields = await form();
    host.clock.advance(10 * 60_000);
    expect((await postLogin(host.url, fields)).status).toBe(400);
  });

  it('does not pass an oversized password to the login hook', async () => {
    const calls = host.loginCalls.length;
    const response = await postLogin(host.url, await form(), {
      email: ALICE.email,
      password: 'x'.repeat(2000),
    });
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('Enter your e-mail and password.');
    expect(host.loginCalls.length).toBe(calls);
  });

  it('asks again for credentials when they are missing', async () => {
    const response = await postForm(`${host.url}/oauth/authorize`, await form());
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('Enter your e-mail and password.');
  });
});

describe('login throttling', () => {
  /** Fetches the login form of a freshly registered client, anew for every attempt. */
  async function loginForms(host: TestHost) {
    const clientId = await registerClient(host.url);
    const { challenge } = pkcePair();
    return async () => (await getAuthorize(host.url, authorizeParams(clientId, challenge))).fields;
  }

  it('refuses further attempts on an account after repeated failures, without calling login', async () => {
    const limits = { loginFailuresPerAccount: 3, loginFailuresPerIp: 100 };
    await withHost({ limits }, async (host) => {
      const form = await loginForms(host);
      for (let i = 0; i < 3; i += 1) {
        const failed = await postLogin(host.url, await form(), {
          email: ALICE.email,
          password: 'x',
        });
        expect(failed.status).toBe(200);
      }
      const calls = host.loginCalls.length;
      const throttled = await postLogin(host.url, await form(), ALICE);
      expect(throttled.status).toBe(429);
      expect(await throttled.text()).toContain('Too many failed sign-in attempts');
      expect(host.loginCalls.length).toBe(calls);
      const otherAccount = await postLogin(host.url, await form(), LOCKED);
      expect(otherAccount.status).toBe(200);
      host.clock.advance(15 * 60_000);
      expect((await postLogin(host.url, await form(), ALICE)).status).toBe(303);
    });
  });

  it('refuses further attempts from an IP after repeated failures on many accounts', async () => {
    const limits = { loginFailuresPerAccount: 100, loginFailuresPerIp: 4 };
    await withHost({ limits }, async (host) => {
      const form = await loginForms(host);
      for (let i = 0; i < 4; i += 1) {
        await postLogin(host.url, await form(), { email: `u${i}@example.com`, password: 'x' });
      }
      const throttled = await postLogin(host.url, await form(), ALICE);
      expect(throttled.status).toBe(429);
    });
  });
});

describe('authorize endpoint limits', () => {
  it('answers 429 with Retry-After beyond the per-IP request rate', async () => {
    await withHost({ limits: { authorizeRequestsPerIpPerMinute: 2 } }, async (host) => {
      const clientId = await registerClient(host.url);
      const params = authorizeParams(clientId, pkcePair().challenge);
      expect((await getAuthorize(host.url, params)).response.status).toBe(200);
      expect((await getAuthorize(host.url, params)).response.status).toBe(200);
      const refused = await getAuthorize(host.url, params);
      expect(refused.response.status).toBe(429);
      expect(refused.response.headers.get('retry-after')).toBe('60');
      expectSecurityHeaders(refused.response);
      host.clock.advance(60_000);
      expect((await getAuthorize(host.url, params)).response.status).toBe(200);
    });
  });

  it('keeps rendering forms past the pending cap: the oldest form goes, not the newcomer', async () => {
    await withHost({ limits: { maxPendingAuthorizations: 2 } }, async (host) => {
      const clientId = await registerClient(host.url);
      const params = authorizeParams(clientId, pkcePair().challenge);
      const forms = [];
      for (let i = 0; i < 3; i += 1) {
        const form = await getAuthorize(host.url, params);
        expect(form.response.status).toBe(200);
        forms.push(form);
      }
      const [first, second, third] = forms as [
        (typeof forms)[0],
        (typeof forms)[0],
        (typeof forms)[0],
      ];
      const evicted = await postLogin(host.url, first.fields);
      expect(evicted.status).toBe(400);
      expect(await evicted.text()).toContain('The sign-in form has expired');
      expect((await postLogin(host.url, second.fields)).status).toBe(303);
      expect((await postLogin(host.url, third.fields)).status).toBe(303);
    });
  });

  describe('from many networks', () => {
    const clients: LoopbackClient[] = [];
    afterAll(() => {
      for (const client of clients) client.close();
    });

    function from(address: string): LoopbackClient {
      const client = loopbackClient(address);
      clients.push(client);
      return client;
    }

    async function form(client: LoopbackClient, host: TestHost, params: Record<string, string>) {
      const page = await client.send(`${host.url}/oauth/authorize?${new URLSearchParams(params)}`);
      return { status: page.status, fields: hiddenFields(page.text) };
    }

    it('counts authorize requests per network as well as per address', async () => {
      await withHost({ limits: { authorizeRequestsPerNetworkPerMinute: 3 } }, async (host) => {
        const clientId = await registerClient(host.url);
        const params = authorizeParams(clientId, pkcePair().challenge);
        const neighbours = loopbackAddresses(4, { block: 50, sameNetwork: true }).map(from);
        const statuses = [];
        for (const neighbour of neighbours) {
          statuses.push((await form(neighbour, host, params)).status);
        }
        expect(statuses).toEqual([200, 200, 200, 429]);
        const elsewhere = from(loopbackAddresses(1, { block: 51 })[0] as string);
        expect((await form(elsewhere, host, params)).status).toBe(200);
      });
    });

    it('makes a flood from many networks lose its own forms, and lets a fresh network sign in', async () => {
      await withHost(
        {
          limits: { maxPendingAuthorizations: 6, pendingAuthorizationsPerNetwork: 4 },
        },
        async (host) => {
          const clientId = await registerClient(host.url);
          const params = authorizeParams(clientId, pkcePair().challenge);
          // Three flooding networks, three requests each: more than the cap of 6 pending forms.
          const flooders = loopbackAddresses(3, { block: 60 }).map(from);
          const flood: Array<Record<string, string>> = [];
          for (let round = 0; round < 3; round += 1) {
            for (const flooder of flooders) {
              const page = await form(flooder, host, params);
              expect(page.status).toBe(200);
              flood.push(page.fields);
            }
          }
          const user = from(loopbackAddresses(1, { block: 70 })[0] as string);
          const page = await form(user, host, params);
          expect(page.status).toBe(200);
          const login = await user.send(`${host.url}/oauth/authorize`, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({ ...page.fields, ...ALICE }).toString(),
          });
          expect(login.status).toBe(303);
          expect(new URL(login.headers.location as string).searchParams.get('code')).toBeTruthy();
          // The flood's first four forms made room (the oldest of the heaviest network each time).
          const statuses = [];
          for (const fields of flood) statuses.push((await postLogin(host.url, fields)).status);
          expect(statuses).toEqual([400, 400, 400, 400, 303, 303, 303, 303, 303]);
        },
      );
    });
  });
});

describe('the login page names the client by its registered metadata', () => {
  const host = hostForSuite();
  const { challenge } = pkcePair();

  async function register(metadata: Record<string, unknown>) {
    const response = await fetch(`${host.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT_URI], ...metadata }),
    });
    expect(response.status).toBe(200);
    return (await response.json()) as Record<string, unknown> & { client_id: string };
  }

  it('shows the escaped client_name, the logo and the home page when they are safe', async () => {
    const client = await register({
      client_name: '<b>Acme</b> & "Co"',
      logo_uri: 'https://cdn.acme.example/logo.png',
      client_uri: 'https://acme.example/',
    });
    expect(client).toMatchObject({
      client_name: '<b>Acme</b> & "Co"',
      logo_uri: 'https://cdn.acme.example/logo.png',
      client_uri: 'https://acme.example/',
    });
    const { response, html } = await getAuthorize(
      host.url,
      authorizeParams(client.client_id, challenge),
    );
    expect(html).toContain(
      '<strong id="client-name">&lt;b&gt;Acme&lt;/b&gt; &amp; &quot;Co&quot;</strong>',
    );
    expect(html).not.toContain('<b>Acme</b>');
    expect(html).toContain('<img id="client-logo" src="https://cdn.acme.example/logo.png"');
    expect(html).toContain('href="https://acme.example/" rel="noopener noreferrer"');
    // Only the logo's origin is added to the page's image sources.
    expect(response.headers.get('content-security-policy')).toContain(
      "img-src 'self' data: https://cdn.acme.example;",
    );
  });

  it('accepts loopback http for the logo and home page', async () => {
    const client = await register({
      client_name: 'Local tool',
      logo_uri: 'http://127.0.0.1:6274/logo.svg',
      client_uri: 'http://localhost:6274/',
    });
    const { html } = await getAuthorize(host.url, authorizeParams(client.client_id, challenge));
    expect(html).toContain('src="http://127.0.0.1:6274/logo.svg"');
    expect(html).toContain('href="http://localhost:6274/"');
  });

  it.each([
    ['javascript:alert(1)', 'data:text/html,<script>alert(1)</script>'],
    ['http://tracker.example/pixel.png', 'http://evil.example/'],
    ['https://user:pw@cdn.example/logo.png', 'ftp://files.example/'],
  ])('drops an unsafe logo_uri %s and client_uri %s', async (logo, home) => {
    const client = await register({ client_name: 'Shady', logo_uri: logo, client_uri: home });
    expect(client.logo_uri).toBeUndefined();
    expect(client.client_uri).toBeUndefined();
    const { response, html } = await getAuthorize(
      host.url,
      authorizeParams(client.client_id, challenge),
    );
    expect(html).toContain('<strong id="client-name">Shady</strong>');
    expect(html).not.toContain('id="client-logo"');
    expect(html).not.toContain('id="client-uri"');
    expect(response.headers.get('content-security-policy')).toContain("img-src 'self' data:;");
  });

  it('drops names that are empty, too long or not strings, and strips control characters', async () => {
    for (const name of ['', '   ', 'x'.repeat(101), 42, ['a'], { a: 1 }]) {
      const client = await register({ client_name: name });
      expect(client.client_name).toBeUndefined();
    }
    const spoof = await register({ client_name: 'Good\u202Egnp.exe\u0007 App' });
    expect(spoof.client_name).toBe('Goodgnp.exe App');
  });

  it('falls back to the client id when no name was registered', async () => {
    const client = await register({});
    const { html } = await getAuthorize(host.url, authorizeParams(client.client_id, challenge));
    expect(html).toContain(`<code id="client-id">${client.client_id}</code>`);
    expect(html).not.toContain('id="client-name"');
  });
});
