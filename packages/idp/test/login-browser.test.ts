import { createHash, randomBytes } from 'node:crypto';
import { createLogger } from '@mcp-identity/common';
import { describeBrowser, useTempDir } from '@mcp-identity/common/testing';
import { type RunningIdp, startIdp } from '@mcp-identity/idp';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { userBody } from './helpers.js';

const REDIRECT = 'http://127.0.0.1:8766/callback';

describeBrowser('login page in Chromium', (browser) => {
  const tempDir = useTempDir('idp-browser-');
  let idp: RunningIdp;
  beforeAll(async () => {
    idp = await startIdp({
      dataDir: tempDir(),
      http: true,
      port: 0,
      logger: createLogger({ level: 'silent' }),
    });
    await idp.admin.service.createUser('user', userBody('browser-user', { password: 'Browser-1' }));
  });
  afterAll(() => idp?.close());

  it('signs a user in, keeps an injected state inert and redirects with a code', async () => {
    const registration = await fetch(`${idp.url}/oauth2/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: 'Browser client' }),
    });
    const { client_id: clientId } = (await registration.json()) as { client_id: string };
    const verifier = randomBytes(32).toString('base64url');
    const state = '"><img src=x onerror="window.injected=1">';
    const query = new URLSearchParams({
      client_id: clientId,
      redirect_uri: REDIRECT,
      response_type: 'code',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      state,
    });

    const page = await browser().newPage();
    let redirectedTo: URL | undefined;
    await page.route(`${REDIRECT}**`, async (route) => {
      redirectedTo = new URL(route.request().url());
      await route.fulfill({ status: 200, contentType: 'text/plain', body: 'done' });
    });
    await page.goto(`${idp.url}/oauth2/authorize?${query}`);
    expect(await page.evaluate('window.injected')).toBeUndefined();
    await page.fill('input[name=username]', 'browser-user');
    await page.fill('input[name=password]', 'wrong-password');
    await page.click('button[type=submit]');
    await expect
      .poll(() => page.textContent('[role=alert]'), { timeout: 15_000 })
      .toContain('Login failed');

    await page.fill('input[name=password]', 'Browser-1');
    await page.click('button[type=submit]');
    await expect
      .poll(() => redirectedTo?.searchParams.get('code'), { timeout: 15_000 })
      .toBeTruthy();
    expect(redirectedTo?.searchParams.get('state')).toBe(state);
    await page.close();
  });
});
