import { Sdk2BrowserSignInProvider } from '@mcp-identity/common/testing';
import type { LoginCredentials } from '@mcp-identity/oauth';
import type { BrowserContext } from 'playwright-core';

export const CLIENT_NAME = 'arazzo-mcp test client';

/**
 * The SDK client's user signing in at Area A's login form in Chromium; it also records the
 * client name the login page showed.
 */
export class BrowserLoginProvider extends Sdk2BrowserSignInProvider {
  /** What the login page showed as the client's name. */
  shownClientName: string | null = null;

  constructor(browser: () => BrowserContext, credentials: LoginCredentials, redirectUrl: string) {
    super(browser, CLIENT_NAME, redirectUrl, async (page) => {
      this.shownClientName = await page.textContent('#client-name');
      await page.fill('#email', credentials.email);
      await page.fill('#password', credentials.password);
      await page.click('button[type=submit]');
    });
  }
}
