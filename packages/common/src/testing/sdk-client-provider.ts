import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { BrowserContext, Page } from 'playwright-core';

/**
 * An MCP SDK OAuth client provider whose user signs in in Chromium, as a desktop client's
 * user would: a public client (PKCE, no secret) with one loopback redirect URI that sends
 * `state`. `signIn` fills the authorization server's own login form on the opened page; the
 * browser then lands on `redirectUrl` (a real listener), and the code is kept. Everything the
 * SDK hands over is kept too, so a test can inspect it.
 */
export class BrowserSignInProvider implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined;
  current: OAuthTokens | undefined;
  authorizationUrls: URL[] = [];
  code: string | undefined;
  #verifier = '';
  #state = '';

  constructor(
    private readonly browser: () => BrowserContext,
    private readonly clientName: string,
    readonly redirectUrl: string,
    private readonly signIn: (page: Page) => Promise<void>,
  ) {}

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.clientName,
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  state(): string {
    this.#state = crypto.randomUUID();
    return this.#state;
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.client;
  }

  saveClientInformation(info: OAuthClientInformationMixed): void {
    this.client = info;
  }

  tokens(): OAuthTokens | undefined {
    return this.current;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.current = tokens;
  }

  saveCodeVerifier(verifier: string): void {
    this.#verifier = verifier;
  }

  codeVerifier(): string {
    return this.#verifier;
  }

  async redirectToAuthorization(url: URL): Promise<void> {
    this.authorizationUrls.push(url);
    this.code = undefined;
    const page = await this.browser().newPage();
    try {
      const response = await page.goto(url.href);
      if (response?.status() !== 200) throw new Error(`login page answered ${response?.status()}`);
      await Promise.all([
        page.waitForURL((landed) => landed.href.startsWith(this.redirectUrl)),
        this.signIn(page),
      ]);
      const landed = new URL(page.url());
      if (landed.searchParams.get('state') !== this.#state) throw new Error('state mismatch');
      this.code = landed.searchParams.get('code') ?? undefined;
    } finally {
      await page.close();
    }
  }
}
