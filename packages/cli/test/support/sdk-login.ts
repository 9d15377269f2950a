import { BrowserSignInProvider } from '@mcp-identity/common/testing';
import type { BrowserContext } from 'playwright-core';

export const CLIENT_NAME = 'mcp-identity standard client test';

/** The SDK client's user signing in at the IdP's login form in Chromium. */
export function idpBrowserLogin(
  browser: () => BrowserContext,
  credentials: { userName: string; password: string },
  redirectUrl: string,
): BrowserSignInProvider {
  return new BrowserSignInProvider(browser, CLIENT_NAME, redirectUrl, async (page) => {
    await page.fill('input[name=username]', credentials.userName);
    await page.fill('input[name=password]', credentials.password);
    await page.click('button[type=submit]');
  });
}
