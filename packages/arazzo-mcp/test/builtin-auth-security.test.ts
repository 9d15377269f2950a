import { AccountStore } from '@mcp-identity/arazzo-mcp';
import type { RunningServer } from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
import { loginFormFields, obtainTokenWithLoginForm } from '@mcp-identity/oauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBuiltinServer } from './support/builtin-server.js';

const tempDir = useTempDir('arazzo-mcp-security-');
const REDIRECT_URI = 'http://127.0.0.1:8976/callback';
const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGcSuJZ-cM';
let server: RunningServer;
let dataDir: string;

beforeAll(async () => {
  dataDir = tempDir();
  // Believing X-Forwarded-For lets one test play many client addresses.
  server = await startBuiltinServer(tempDir(), {
    dataDir,
    trustProxy: true,
    onInitialAccount: () => {},
  });
});

afterAll(() => server?.close());

async function addAccount(email: string, password: string): Promise<void> {
  const store = AccountStore.open(dataDir);
  try {
    await store.add(email, password);
  } finally {
    store.close();
  }
}

function apiLogin(email: string, password: string, ip: string): Promise<Response> {
  return fetch(`${server.url}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': ip },
    body: JSON.stringify({ email, password }),
  });
}

async function registerClient(redirectUris: string[]): Promise<Response> {
  return fetch(`${server.url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: redirectUris, client_name: 'security test' }),
  });
}

/** A rendered login form's fields (its own CSRF transaction), fetched from address `ip`. */
async function loginForm(clientId: string, ip: string): Promise<Record<string, string>> {
  const query = new URLSearchParams({
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    code_challenge: CHALLENGE,
    code_challenge_method: 'S256',
    state: 'xyz',
  });
  const response = await fetch(`${server.url}/oauth/authorize?${query}`, {
    headers: { 'x-forwarded-for': ip },
  });
  expect(response.status).toBe(200);
  return loginFormFields(await response.text());
}

function submitForm(fields: Record<string, string>, ip: string): Promise<Response> {
  return fetch(`${server.url}/oauth/authorize`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': ip },
    body: new URLSearchParams(fields),
    redirect: 'manual',
  });
}

const notThrottled = (responses: Response[]) => responses.filter((r) => r.status !== 429).length;

describe('Area A login throttles count an attempt before checking the password', () => {
  it.each([40, 300])(
    '/api/auth/login evaluates at most 5 of %i concurrent wrong passwords for one account',
    async (attempts) => {
      const email = `api-race-${attempts}@example.com`;
      await addAccount(email, 'the real password');
      const responses = await Promise.all(
        Array.from({ length: attempts }, (_, i) =>
          apiLogin(email, `guess ${i}`, `10.1.${i >> 8}.${i & 255}`),
        ),
      );
      expect(responses.every((r) => r.status === 401 || r.status === 429)).toBe(true);
      expect(notThrottled(responses)).toBeLessThanOrEqual(5);
      // The right password is refused too while the account's window lasts.
      expect((await apiLogin(email, 'the real password', '10.9.9.9')).status).toBe(429);
    },
  );

  it.each([40, 300])(
    '/api/auth/login evaluates at most 20 of %i concurrent wrong passwords from one address',
    async (attempts) => {
      const ip = `10.2.0.${attempts % 256}`;
      const responses = await Promise.all(
        Array.from({ length: attempts }, (_, i) =>
          apiLogin(`spray-${attempts}-${i}@example.com`, 'guess', ip),
        ),
      );
      expect(notThrottled(responses)).toBeLessThanOrEqual(20);
    },
  );

  it.each([40, 300])(
    'the login form evaluates at most 5 of %i concurrent wrong passwords for one account',
    async (attempts) => {
      const email = `form-race-${attempts}@example.com`;
      await addAccount(email, 'the real password');
      const client = (await (await registerClient([REDIRECT_URI])).json()) as {
        client_id: string;
      };
      // One address per attempt, as a botnet would: only the per-account limit can hold.
      const ips = Array.from({ length: attempts }, (_, i) => `10.3.${i >> 8}.${i & 255}`);
      const forms = await Promise.all(ips.map((ip) => loginForm(client.client_id, ip)));
      const responses = await Promise.all(
        forms.map((fields, i) =>
          submitForm({ ...fields, email, password: `guess ${i}` }, ips[i] ?? ''),
        ),
      );
      expect(responses.every((r) => r.status === 200 || r.status === 429)).toBe(true);
      expect(notThrottled(responses)).toBeLessThanOrEqual(5);
    },
  );
});

describe('Area A re-checks the account on every refresh', () => {
  it('refuses the refresh token and the access token of a removed account', async () => {
    const email = 'leaver@example.com';
    await addAccount(email, 'leaver password');
    const tokens = await obtainTokenWithLoginForm(server.url, {
      email,
      password: 'leaver password',
    });
    const refresh = (refreshToken: string) =>
      fetch(`${server.url}/oauth/token`, {
        method: 'POST',
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          refresh_token: refreshToken,
          client_id: tokens.clientId,
        }),
      });
    // While the account exists, refreshing works and rotates.
    const first = await refresh(tokens.refreshToken ?? '');
    expect(first.status).toBe(200);
    const { refresh_token: rotated } = (await first.json()) as { refresh_token: string };

    const toolsList = (accessToken: string) =>
      fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${accessToken}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
      });
    expect((await toolsList(tokens.accessToken)).status).toBe(200);

    const store = AccountStore.open(dataDir);
    store.remove(email);
    store.close();
    // The access token issued before the removal stops working at once, not when it expires.
    expect((await toolsList(tokens.accessToken)).status).toBe(401);
    const refused = await refresh(rotated);
    expect(refused.status).toBe(400);
    const body = (await refused.json()) as Record<string, unknown>;
    expect(body.error).toBe('invalid_grant');
    expect(body.access_token).toBeUndefined();

    // Re-creating an account with the same e-mail does not revive the old grant.
    await addAccount(email, 'leaver password');
    expect((await refresh(rotated)).status).toBe(400);
  });
});

describe('Area A registration accepts redirect URIs from an allow-list only', () => {
  it.each([
    'view-source:https://evil.example/',
    'jar:https://evil.example/app.jar!/',
    'x-javascript:alert(1)',
    'javascript:alert(1)',
    'myapp:/callback',
    'https://user:pw@app.example.com/cb',
  ])('refuses %s with invalid_redirect_uri', async (uri) => {
    const response = await registerClient([uri]);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: 'invalid_redirect_uri' });
  });

  it('accepts a reverse-domain private-use scheme', async () => {
    const response = await registerClient(['com.example.app:/oauth2redirect']);
    expect(response.status).toBe(200);
  });
});
