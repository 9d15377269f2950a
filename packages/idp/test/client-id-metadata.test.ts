import { refusedClientDocuments, startClientMetadataServer } from '@mcp-identity/common/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { WITHHELD_SCOPES_WINDOW_MS } from '../src/oauth/withheld-scopes.js';
import {
  authorizeRequest,
  createUserWithRole,
  postLogin,
  redeemCode,
  registerClient,
  startTestIdp,
  TEST_REDIRECT_URI,
  tokenRequest,
} from './helpers.js';

const PASSWORD = 'Pa55word!x';

/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document) at the IdP: a real
 * HTTPS server on loopback serves the documents, so the development allowance for private
 * addresses is on, except where a test says otherwise.
 */
describe('Client ID Metadata Documents at the IdP', async () => {
  const documents = await startClientMetadataServer();
  afterAll(() => documents.close());
  const idp = await startTestIdp({
    clientIdMetadata: { allowPrivateAddresses: true, ca: documents.ca },
  });
  const strict = await startTestIdp({ clientIdMetadata: { ca: documents.ca } });
  await createUserWithRole(idp, 'doc-user', PASSWORD, ['internal_user_mgt_list']);

  const publish = (path: string) =>
    documents.publish(path, { name: 'Document Client', redirectUri: TEST_REDIRECT_URI });
  const authorize = (base: string, params: Record<string, string>) =>
    fetch(`${base}/oauth2/authorize?${new URLSearchParams(params)}`, { redirect: 'manual' });

  it('advertises client_id_metadata_document_supported', async () => {
    const metadata = await (
      await fetch(`${idp.url}/.well-known/oauth-authorization-server`)
    ).json();
    expect(metadata).toMatchObject({ client_id_metadata_document_supported: true });
  });

  it('signs a client in by its document URL alone: page, code and tokens', async () => {
    const clientId = publish('/clients/good.json');
    const { params, verifier } = authorizeRequest(clientId, 'internal_user_mgt_list');
    const page = await authorize(idp.url, params);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<strong id="client-name">Document Client</strong>');
    expect(html).toContain(`<strong id="client-host">${new URL(clientId).host}</strong>`);
    expect(html).toContain('<strong id="redirect-host">127.0.0.1:8765</strong>');
    expect(html).toContain('<li><code>internal_user_mgt_list</code></li>');
    const login = await postLogin(idp, params, { userName: 'doc-user', password: PASSWORD });
    expect(login.status).toBe(302);
    const code = new URL(login.headers.get('location') ?? '').searchParams.get('code') ?? '';
    const exchange = await redeemCode(idp, { code, clientId, verifier });
    expect(exchange.status).toBe(200);
    expect(exchange.body.scope).toBe('internal_user_mgt_list');
    const refreshed = await tokenRequest(idp, {
      grant_type: 'refresh_token',
      refresh_token: exchange.body.refresh_token ?? '',
      client_id: clientId,
    });
    expect(refreshed.status).toBe(200);
    // One fetch served the page, the login, the exchange and the refresh.
    expect(documents.requests('/clients/good.json')).toBe(1);
  });

  it('matches redirect URIs exactly against the document, without redirecting', async () => {
    const clientId = publish('/clients/exact.json');
    const { params } = authorizeRequest(clientId, 'internal_login', {
      redirect_uri: 'http://127.0.0.1:9999/callback',
    });
    const response = await authorize(idp.url, params);
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
  });

  for (const refused of refusedClientDocuments(documents, TEST_REDIRECT_URI)) {
    it(`refuses ${refused.name}: a 400 page at authorize, invalid_client at token`, async () => {
      const server = refused.strict ? strict : idp;
      const { params } = authorizeRequest(refused.clientId, 'internal_login');
      const response = await authorize(server.url, params);
      expect(response.status).toBe(400);
      expect(response.headers.get('location')).toBeNull();
      const html = await response.text();
      expect(html).toContain('invalid_client');
      expect(html).toContain(refused.reason);
      const token = await tokenRequest(server, {
        grant_type: 'refresh_token',
        refresh_token: 'x',
        client_id: refused.clientId,
      });
      expect(token.status).toBe(401);
      expect(token.body).toMatchObject({ error: 'invalid_client' });
      expect(token.body.error_description).toContain(refused.reason);
      // Refused before any request reached the document's server.
      if (refused.strict) expect(documents.requests(new URL(refused.clientId).pathname)).toBe(0);
    });
  }
});

describe('step-up that ends', async () => {
  let now = Date.now();
  const idp = await startTestIdp({ clock: () => now });
  await createUserWithRole(idp, 'lister', PASSWORD, ['internal_user_mgt_list']);

  it('refuses with access_denied, naming the scope, when the role grants none of those asked', async () => {
    const clientId = await registerClient(idp);
    const { params } = authorizeRequest(clientId, 'internal_user_mgt_delete');
    const login = await postLogin(idp, params, { userName: 'lister', password: PASSWORD });
    expect(login.status).toBe(302);
    const location = new URL(login.headers.get('location') ?? '');
    expect(`${location.origin}${location.pathname}`).toBe(TEST_REDIRECT_URI);
    expect(Object.fromEntries(location.searchParams)).toEqual({
      error: 'access_denied',
      error_description:
        'Your role does not grant the scope internal_user_mgt_delete; ask your administrator for it.',
      state: 'st',
      iss: idp.issuer,
    });
  });

  it('narrows a broader request to what the role grants, saying so in the token response', async () => {
    const clientId = await registerClient(idp);
    const { params, verifier } = authorizeRequest(
      clientId,
      'internal_user_mgt_list internal_user_mgt_delete',
    );
    const login = await postLogin(idp, params, { userName: 'lister', password: PASSWORD });
    const code = new URL(login.headers.get('location') ?? '').searchParams.get('code') ?? '';
    const exchange = await redeemCode(idp, { code, clientId, verifier });
    expect(exchange.body.scope).toBe('internal_user_mgt_list');
  });

  it('refuses, naming the scope, a request that asks again for a scope it left out and would grant nothing new', async () => {
    const clientId = await registerClient(idp);
    const signIn = async (scope: string) => {
      const { params } = authorizeRequest(clientId, scope);
      const login = await postLogin(idp, params, { userName: 'lister', password: PASSWORD });
      return new URL(login.headers.get('location') ?? '').searchParams;
    };
    // The first sign-in (the scopes a 401 named) is narrowed, and so is the same request again
    // (a client that lost its tokens); the step-up that follows a 403 (the scopes held plus the
    // missing one, as SEP-2350 clients ask) is refused instead of granted the same again.
    const first = 'internal_user_mgt_list internal_user_mgt_delete internal_group_mgt_view';
    const union = 'internal_user_mgt_list internal_user_mgt_delete';
    expect((await signIn(first)).get('code')).toBeTruthy();
    expect((await signIn(first)).get('code')).toBeTruthy();
    const stepUp = await signIn(union);
    expect(stepUp.get('code')).toBeNull();
    expect(stepUp.get('error')).toBe('access_denied');
    expect(stepUp.get('error_description')).toBe(
      'Your role does not grant the scope internal_user_mgt_delete; ask your administrator for it.',
    );
    // Past the window the same request is an ordinary sign-in again, narrowed.
    now += WITHHELD_SCOPES_WINDOW_MS + 1;
    expect((await signIn(union)).get('code')).toBeTruthy();
  });
});
