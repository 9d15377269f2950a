import formbody from '@fastify/formbody';
import { createAccessTokenIssuer, generateSigningKey, oauthServer } from '@mcp-identity/oauth';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import {
  authorizeParams,
  getAuthorize,
  pkcePair,
  postLogin,
  registerClient,
} from './fixtures/flow.js';
import { ALICE } from './fixtures/host.js';

describe('mounting the plugin', () => {
  it('works in a host that already registered a form parser', async () => {
    const key = await generateSigningKey();
    const app = Fastify({ logger: false, forceCloseConnections: true });
    await app.register(formbody);
    await app.register(oauthServer, {
      issueAccessToken: createAccessTokenIssuer(key),
      checkSubject: async () => ({ active: true, scopes: ['mcp:tools'] }),
      login: async () => ({ ok: true, userId: ALICE.id }),
    });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const clientId = await registerClient(url);
      const form = await getAuthorize(url, authorizeParams(clientId, pkcePair().challenge));
      expect((await postLogin(url, form.fields)).status).toBe(303);
    } finally {
      await app.close();
    }
  });

  it('refuses to start without the login and token hooks', async () => {
    const app = Fastify({ logger: false });
    await expect(
      app.register(oauthServer, {} as Parameters<typeof oauthServer>[1]).ready(),
    ).rejects.toThrow(/login hook is required/);
  });

  it('refuses to start without the subject re-check: no grant may skip it', async () => {
    const key = await generateSigningKey('ES256');
    const options = {
      issueAccessToken: createAccessTokenIssuer(key),
      login: async () => ({ ok: true as const, userId: ALICE.id }),
    } as unknown as Parameters<typeof oauthServer>[1];
    await expect(Fastify({ logger: false }).register(oauthServer, options).ready()).rejects.toThrow(
      /checkSubject hook is required/,
    );
  });
});
