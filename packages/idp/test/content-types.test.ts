import { lineLogger } from '@mcp-identity/common/testing';
import { describe, expect, it } from 'vitest';
import {
  ADMIN_CLIENT,
  authorizeRequest,
  MALFORMED_CONTENT_TYPES,
  registerClient,
  startTestIdp,
} from './helpers.js';

// Issue 36: a Content-Type that is no type/subtype (RFC 9110 §8.3.1) was a 500 with a logged
// stack trace at every OAuth endpoint taking a body. It is the same refusal as any other
// media type the endpoint does not take, and nothing is logged as an error.
describe('a Content-Type without a valid type/subtype', async () => {
  const lines: Record<string, unknown>[] = [];
  const idp = await startTestIdp({ logger: lineLogger((line) => lines.push(line)) });
  const clientId = await registerClient(idp);
  const basic = `Basic ${Buffer.from(`${ADMIN_CLIENT.clientId}:${ADMIN_CLIENT.clientSecret}`).toString('base64')}`;
  const { params } = authorizeRequest(clientId, 'internal_login');
  // Bodies each endpoint would act on with the right media type.
  const requests: [path: string, body: string, error: string][] = [
    [
      '/oauth2/token',
      'grant_type=client_credentials&scope=internal_user_mgt_list',
      'invalid_request',
    ],
    [
      '/oauth2/register',
      JSON.stringify({ redirect_uris: ['http://127.0.0.1:8765/callback'] }),
      'invalid_client_metadata',
    ],
    ['/oauth2/revoke', `token=${idp.adminToken}`, 'invalid_request'],
    ['/oauth2/introspect', `token=${idp.adminToken}`, 'invalid_request'],
    [
      '/oauth2/authorize',
      new URLSearchParams({ ...params, username: 'x', password: 'y' }).toString(),
      'invalid_request',
    ],
  ];

  it('is a 400 in the OAuth error shape, changes nothing and logs no error', async () => {
    const clients = idp.admin.apps.countDynamic();
    for (const [path, body, error] of requests) {
      for (const type of MALFORMED_CONTENT_TYPES) {
        const response = await fetch(`${idp.url}${path}`, {
          method: 'POST',
          headers: { 'content-type': type, authorization: basic },
          body,
        });
        expect(response.status, `${path} ${type}`).toBe(400);
        expect(response.headers.get('content-type')).toMatch(/^application\/json/);
        expect(((await response.json()) as { error: string }).error).toBe(error);
      }
    }
    expect(idp.admin.apps.countDynamic()).toBe(clients);
    expect((await idp.scim('GET', '/Users?count=1')).status).toBe(200);
    expect(lines.filter((line) => Number(line.level) >= 50)).toEqual([]);
    expect(JSON.stringify(lines)).not.toMatch(/"stack"/);
  });
});
