import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { createLogger } from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
import { type RunningIdp, startIdp } from '@mcp-identity/idp';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type StackLayout, stackLayout } from '../src/stack/layout.js';
import { LOGIN_REDIRECT_URI, userAccessToken } from '../src/stack/user-login.js';

// The browserless sign-in `up --delegation`'s demo, e2e test and bench use, against a real IdP.
const tempDir = useTempDir('cli-user-login-');
const client = { clientId: 'cli-login-client', clientSecret: 'cli-login-secret-0123456789' };
const reader = { userName: 'reader', password: 'Reader-Passw0rd!' };
let idp: RunningIdp;
let layout: StackLayout;

beforeAll(async () => {
  idp = await startIdp({
    dataDir: tempDir(),
    http: true,
    port: 0,
    logger: createLogger({ level: 'silent' }),
    bootstrap: {
      applications: [
        {
          name: 'client',
          ...client,
          grantTypes: ['authorization_code'],
          redirectUris: [LOGIN_REDIRECT_URI],
          scopes: '*',
        },
      ],
      users: [{ schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], ...reader }],
      roles: [
        {
          displayName: 'auditor',
          permissions: ['internal_user_mgt_list', 'internal_user_mgt_view'],
          users: [reader.userName],
        },
      ],
    },
  });
  const dataDir = tempDir();
  const base = stackLayout(dataDir, {
    idp: idp.port,
    mcp: 1,
    gatewayHttps: 2,
    gatewayHttp: 3,
    gatewayManagement: 4,
    areaA: 5,
  });
  // Plain HTTP here: the CA file is read but never used.
  mkdirSync(dirname(base.caFile), { recursive: true });
  writeFileSync(base.caFile, '');
  layout = {
    ...base,
    idp: { ...base.idp, url: idp.url, tokenUrl: idp.tokenEndpoint },
  };
});

afterAll(async () => {
  await idp?.close();
});

describe('userAccessToken', () => {
  it("signs a person in through the login form and returns their token with their role's scopes", async () => {
    const token = await userAccessToken(layout, client, reader, [
      'internal_user_mgt_list',
      'internal_user_mgt_view',
    ]);
    const claims = decodeJwt(token);
    expect(claims.client_id).toBe(client.clientId);
    expect(String(claims.scope).split(' ').sort()).toEqual([
      'internal_user_mgt_list',
      'internal_user_mgt_view',
    ]);
    expect(claims.sub).toEqual(expect.any(String));
  });

  it('fails, naming the person, with a wrong password', async () => {
    await expect(
      userAccessToken(layout, client, { ...reader, password: 'wrong' }, ['internal_user_mgt_list']),
    ).rejects.toThrow(/did not sign reader in \(HTTP 401/);
  });
});
