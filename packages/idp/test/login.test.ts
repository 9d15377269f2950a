import { verifySecret } from '@mcp-identity/common';
import { openIdpData } from '@mcp-identity/idp';
import { describe, expect, it } from 'vitest';
import {
  authorizeRequest,
  createUserWithRole,
  fetchLoginForm,
  postLoginForm,
  registerClient,
  startTestIdp,
  userBody,
} from './helpers.js';

describe('IdP login form', async () => {
  const idp = await startTestIdp();
  await createUserWithRole(idp, 'signer', 'Signer-pass1', []);
  const clientId = await registerClient(idp);

  const signer = { userName: 'signer', password: 'Signer-pass1' };
  const openForm = (params: Record<string, string>) => fetchLoginForm(idp, params);
  const submit = (params: Record<string, string>, csrf: string, cookie: string) =>
    postLoginForm(idp, params, { csrf, cookie }, signer);

  it('a login form token works once: a replayed form is refused', async () => {
    const { params } = authorizeRequest(clientId, 'internal_login');
    const { csrf, cookie } = await openForm(params);
    expect((await submit(params, csrf, cookie)).status).toBe(302);
    const replay = await submit(params, csrf, cookie);
    expect(replay.status).toBe(400);
    expect(replay.headers.get('location')).toBeNull();
  });

  it('refuses a CSRF token chosen by the submitter', async () => {
    const { params } = authorizeRequest(clientId, 'internal_login');
    const chosen = 'a'.repeat(43);
    const response = await submit(params, chosen, `idp_csrf=${chosen}`);
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
  });

  it('refuses a form token used for other parameters than it was rendered for', async () => {
    const { params } = authorizeRequest(clientId, 'internal_login');
    const { csrf, cookie } = await openForm(params);
    const { params: other } = authorizeRequest(clientId, 'internal_login');
    const response = await submit(other, csrf, cookie);
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
  });
});

describe('password checks', () => {
  it('unknown, password-less and disabled users pay the same password hash as known ones', async () => {
    const data = openIdpData(':memory:');
    try {
      const users = data.service.users;
      let checks = 0;
      const counting = async (secret: string, stored: string) => {
        checks++;
        return verifySecret(secret, stored);
      };
      expect(await users.verifyPassword('nobody', 'Whatever-1', counting)).toBeUndefined();
      expect(checks).toBe(1);

      await data.service.createUser('user', userBody('known', { password: 'Known-pass1' }));
      expect(await users.verifyPassword('known', 'Wrong-pass1', counting)).toBeUndefined();
      expect(checks).toBe(2);
      expect(await users.verifyPassword('known', 'Known-pass1', counting)).toEqual(
        expect.any(String),
      );
      expect(checks).toBe(3);

      const { password: _none, ...withoutPassword } = userBody('nopass');
      await data.service.createUser('user', withoutPassword);
      expect(await users.verifyPassword('nopass', 'Whatever-1', counting)).toBeUndefined();
      expect(checks).toBe(4);

      const id = users.findByUserName('known')!.id;
      await data.service.patchUser('user', id, {
        Operations: [{ op: 'replace', path: 'active', value: false }],
      });
      expect(await users.verifyPassword('known', 'Known-pass1', counting)).toBeUndefined();
      expect(checks).toBe(5);
    } finally {
      data.close();
    }
  });
});
