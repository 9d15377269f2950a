import { refusedClientDocuments, startClientMetadataServer } from '@mcp-identity/common/testing';
import { afterAll, describe, expect, it } from 'vitest';
import {
  authorizeParams,
  exchangeCode,
  getAuthorize,
  listTools,
  pkcePair,
  postLogin,
  REDIRECT_URI,
} from './fixtures/flow.js';
import { startHost } from './fixtures/host.js';

/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document) at Area A: a
 * real HTTPS server on loopback serves the documents, so the development allowance for
 * private addresses is on, except where a test says otherwise.
 */
describe('Client ID Metadata Documents at Area A', async () => {
  const documents = await startClientMetadataServer();
  const host = await startHost({
    clientIdMetadata: { allowPrivateAddresses: true, ca: documents.ca },
  });
  const strict = await startHost({ clientIdMetadata: { ca: documents.ca } });
  afterAll(async () => {
    await Promise.all([host.close(), strict.close()]);
    await documents.close();
  });

  const publish = (path: string) =>
    documents.publish(path, { name: 'Document Client', redirectUri: REDIRECT_URI });

  it('advertises client_id_metadata_document_supported', async () => {
    const metadata = await (
      await fetch(`${host.url}/.well-known/oauth-authorization-server`)
    ).json();
    expect(metadata).toMatchObject({ client_id_metadata_document_supported: true });
  });

  it('signs a client in by its document URL alone: login page, code, tokens, /mcp', async () => {
    const clientId = publish('/clients/good.json');
    const { verifier, challenge } = pkcePair();
    const form = await getAuthorize(host.base, authorizeParams(clientId, challenge));
    expect(form.response.status).toBe(200);
    expect(form.html).toContain('<strong id="client-name">Document Client</strong>');
    expect(form.html).toContain(`<strong id="client-host">${new URL(clientId).host}</strong>`);
    expect(form.html).toContain('<strong id="redirect-host">127.0.0.1:8976</strong>');
    const login = await postLogin(host.base, form.fields);
    expect(login.status).toBe(303);
    const code = new URL(login.headers.get('location') ?? '').searchParams.get('code') ?? '';
    const exchange = await exchangeCode(host.base, { code, clientId, verifier });
    expect(exchange.status).toBe(200);
    const tokens = (await exchange.json()) as { access_token: string };
    expect((await listTools(host.base, `Bearer ${tokens.access_token}`)).status).toBe(200);
    // Fetched once for the form and its submission: the cache answered the second time.
    expect(documents.requests('/clients/good.json')).toBe(1);
  });

  it('matches redirect URIs exactly against the document, without redirecting', async () => {
    const clientId = publish('/clients/exact.json');
    const { challenge } = pkcePair();
    const other = authorizeParams(clientId, challenge, {
      redirect_uri: 'http://127.0.0.1:9999/callback',
    });
    const { response, html } = await getAuthorize(host.base, other);
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
    expect(html).toContain('The redirect_uri is not allowed for this client.');
  });

  for (const refused of refusedClientDocuments(documents, REDIRECT_URI)) {
    it(`refuses ${refused.name}, with a 400 page saying why`, async () => {
      const { challenge } = pkcePair();
      const base = refused.strict ? strict.base : host.base;
      const params = authorizeParams(refused.clientId, challenge);
      const { response, html } = await getAuthorize(base, params);
      expect(response.status).toBe(400);
      expect(response.headers.get('location')).toBeNull();
      expect(html).toContain('invalid_client');
      expect(html).toContain(refused.reason);
      // Refused before any request reached the document's server.
      if (refused.strict) expect(documents.requests(new URL(refused.clientId).pathname)).toBe(0);
    });
  }
});
