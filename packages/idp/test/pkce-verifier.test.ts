import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  authorizeRequest,
  createUserWithRole,
  postLogin,
  redeemCode,
  registerClient,
  startTestIdp,
} from './helpers.js';

describe('PKCE verifier syntax (RFC 7636 §4.1)', async () => {
  const idp = await startTestIdp();
  const credentials = { userName: 'pkceuser', password: 'Pkce-pass1' };
  await createUserWithRole(idp, credentials.userName, credentials.password, [
    'internal_user_mgt_list',
  ]);

  /** Signs in with a challenge made from `verifier`, then redeems the code with it. */
  const redeemWith = async (verifier: string) => {
    const clientId = await registerClient(idp);
    const { params } = authorizeRequest(clientId, 'internal_user_mgt_list', {
      code_challenge: createHash('sha256').update(verifier, 'ascii').digest('base64url'),
    });
    const login = await postLogin(idp, params, credentials);
    expect(login.status).toBe(302);
    const code = new URL(login.headers.get('location')!).searchParams.get('code')!;
    return redeemCode(idp, { code, clientId, verifier });
  };

  it('refuses a verifier outside the RFC alphabet or length even when it matches the challenge', async () => {
    for (const verifier of ['short-verifier', `${'a'.repeat(42)} `, 'é'.repeat(43)]) {
      const response = await redeemWith(verifier);
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({
        error: 'invalid_grant',
        error_description: 'PKCE verification failed',
      });
    }
  });

  it('accepts a conforming verifier that matches the challenge', async () => {
    const response = await redeemWith(randomBytes(48).toString('base64url'));
    expect(response.status).toBe(200);
    expect(response.body.token_type).toBe('Bearer');
  });
});
