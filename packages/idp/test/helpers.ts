import { createLogger } from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
import { KNOWN_SCOPES, type RunningIdp, startIdp } from '@mcp-identity/idp';
import { afterAll } from 'vitest';

export const ALL_SCOPES = [...KNOWN_SCOPES];
export const SCIM_JSON = 'application/scim+json';

export type TestIdp = RunningIdp & {
  /** A client-credentials token for an app authorized on every scope, narrowed to `scopes`. */
  token(scopes: readonly string[]): Promise<string>;
  scim(
    method: string,
    path: string,
    options?: { token?: string; body?: unknown; type?: string },
  ): Promise<{
    status: number;
    headers: Headers;
    /** The parsed JSON body; empty when the response had none. */
    body: Record<string, unknown>;
    text: string;
  }>;
  /** A token holding every scope. */
  admin: RunningIdp['admin'];
  adminToken: string;
};

export const ADMIN_CLIENT = { clientId: 'admin-app', clientSecret: 'admin-secret-value' };

/** Starts an IdP over plain HTTP on 127.0.0.1:0 with a fresh data dir, closed after the file. */
export async function startTestIdp(
  extra: Partial<Parameters<typeof startIdp>[0]> = {},
): Promise<TestIdp> {
  const tempDir = useTempDir('idp-test-');
  const idp = await startIdp({
    dataDir: tempDir(),
    http: true,
    port: 0,
    logger: createLogger({ level: 'silent' }),
    bootstrap: {
      customAttributes: [
        { name: 'customerTier', type: 'string' },
        { name: 'contractEndDate', type: 'string' },
      ],
      applications: [
        { name: 'admin', ...ADMIN_CLIENT, scopes: '*', grantTypes: ['client_credentials'] },
      ],
    },
    ...extra,
  });
  afterAll(() => idp.close());
  const token = async (scopes: readonly string[]) => {
    const response = await fetch(`${idp.url}/oauth2/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${ADMIN_CLIENT.clientId}:${ADMIN_CLIENT.clientSecret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: scopes.join(' ') }),
    });
    if (response.status !== 200) throw new Error(`token request failed: ${response.status}`);
    return ((await response.json()) as { access_token: string }).access_token;
  };
  const adminToken = await token(ALL_SCOPES);
  const scim: TestIdp['scim'] = async (method, path, options = {}) => {
    const headers: Record<string, string> = {};
    const bearer = options.token === undefined ? adminToken : options.token;
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    let body: string | undefined;
    if (options.body !== undefined) {
      headers['content-type'] = options.type ?? SCIM_JSON;
      body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    }
    const response = await fetch(`${idp.url}/scim2${path}`, { method, headers, body });
    const text = await response.text();
    return {
      status: response.status,
      headers: response.headers,
      body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
      text,
    };
  };
  return Object.assign(idp, { token, scim, adminToken });
}

export function userBody(userName: string, extra: Record<string, unknown> = {}) {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName,
    password: 'Passw0rd!',
    name: { givenName: userName, familyName: 'Tester' },
    emails: [{ value: `${userName}@example.com`, primary: true }],
    ...extra,
  };
}
