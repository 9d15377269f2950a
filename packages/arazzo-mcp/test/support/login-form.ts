import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';

export const REDIRECT_URI = 'http://127.0.0.1:8976/callback';

export interface Credentials {
  email: string;
  password: string;
}

const ENTITIES: Record<string, string> = {
  '&lt;': '<',
  '&gt;': '>',
  '&quot;': '"',
  '&#39;': "'",
  '&amp;': '&',
};

/** The hidden inputs of the authorization server's login form, as a browser submits them. */
export function hiddenInputs(html: string): Record<string, string> {
  const decode = (value: string) =>
    value.replace(/&(?:lt|gt|quot|#39|amp);/g, (e) => ENTITIES[e] ?? e);
  const fields: Record<string, string> = {};
  for (const [, name = '', value = ''] of html.matchAll(
    /<input type="hidden" name="([^"]*)" value="([^"]*)">/g,
  )) {
    fields[decode(name)] = decode(value);
  }
  return fields;
}

/**
 * Plays the user at an authorization URL: loads the login form, submits the credentials and
 * returns the redirect it answers with (the code and state are in its query).
 */
export async function signInAt(authorizationUrl: URL, credentials: Credentials): Promise<URL> {
  const form = await fetch(authorizationUrl);
  if (form.status !== 200) throw new Error(`the authorize page answered ${form.status}`);
  // The form posts back to the authorize endpoint itself.
  const action = new URL(authorizationUrl.pathname, authorizationUrl);
  const response = await fetch(action, {
    method: 'POST',
    body: new URLSearchParams({ ...hiddenInputs(await form.text()), ...credentials }),
    redirect: 'manual',
  });
  const location = response.headers.get('location');
  if (response.status !== 303 || location === null) {
    throw new Error(`the login answered ${response.status} instead of a redirect`);
  }
  return new URL(location);
}

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
    const redirect = await signInAt(url, this.credentials);
    if (redirect.searchParams.get('state') !== this.#state) throw new Error('state mismatch');
    this.code = redirect.searchParams.get('code') ?? undefined;
  }
}
