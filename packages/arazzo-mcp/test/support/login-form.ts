import { type LoginCredentials as Credentials, submitLoginForm } from '@mcp-identity/oauth';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';

export const REDIRECT_URI = 'http://127.0.0.1:8976/callback';

/** An SDK OAuth client provider whose "browser" fills the login form over HTTP. */
export class FormFillingProvider implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined;
  current: OAuthTokens | undefined;
  authorizationUrls: URL[] = [];
  code: string | undefined;
  #verifier = '';
  #state = '';

  constructor(private readonly credentials: Credentials) {}

  get redirectUrl(): string {
    return REDIRECT_URI;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'arazzo-mcp test client',
      redirect_uris: [REDIRECT_URI],
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
    const redirect = await submitLoginForm(url.href, this.credentials);
    if (redirect.searchParams.get('state') !== this.#state) throw new Error('state mismatch');
    this.code = redirect.searchParams.get('code') ?? undefined;
  }
}
