import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ArazzoValidationError, createRunner, loadArazzo } from '@mcp-identity/arazzo';
import { ensureSelfSignedCertificate } from '@mcp-identity/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FixtureApi, materialize, startFixtureApi } from './fixtures/api.js';

// The fixture's server URL is '{scheme}://{host}/scim2' with scheme defaulting to http: the
// <PREFIX>_RUNNER_SERVER_<VAR> variable switches it to https.
const CREDENTIALS = {
  SCIM_OAUTH2_CLIENT_ID: 'scim-id',
  SCIM_OAUTH2_CLIENT_SECRET: 'scim-secret',
  SCIM_RUNNER_SERVER_SCHEME: 'https',
};

let api: FixtureApi;
let docs: ReturnType<typeof materialize>;
let certDir: string;
let certificate: string;
let location: string;

beforeAll(async () => {
  certDir = mkdtempSync(join(tmpdir(), 'arazzo-tls-'));
  const { cert, key } = await ensureSelfSignedCertificate(certDir);
  certificate = cert;
  api = await startFixtureApi({ https: { cert, key } });
  docs = materialize(['tls.arazzo.yaml', 'scim.openapi.yaml'], api.url);
  api.serveDocs(docs.dir);
  location = `${api.url}/docs/tls.arazzo.yaml`;
});

afterAll(async () => {
  await api.close();
  docs.remove();
  rmSync(certDir, { recursive: true, force: true });
});

describe('a server with a self-signed certificate', () => {
  it('cannot be loaded from while TLS verification is on', async () => {
    const error = (await loadArazzo(location, { tlsVerify: true }).catch(
      (e) => e,
    )) as ArazzoValidationError;
    expect(error).toBeInstanceOf(ArazzoValidationError);
    expect(error.problems).toEqual([
      {
        file: location,
        pointer: '',
        message: expect.stringMatching(/cannot read the document: .*self[- ]signed certificate/),
      },
    ]);
  });

  it('serves the Arazzo document and its sources over https when verification is off', async () => {
    const loaded = await loadArazzo(location, { tlsVerify: false });
    expect(loaded.location).toBe(location);
    expect(loaded.workflows.map((w) => w.workflowId)).toEqual(['secured', 'open']);
  });

  it('is called, tokens included, when ARAZZO_DISABLE_TLS_VERIFY is exactly 1 after trimming', async () => {
    const loaded = await loadArazzo(location, { tlsVerify: false });
    const runner = createRunner(loaded, {
      env: { ...CREDENTIALS, ARAZZO_DISABLE_TLS_VERIFY: ' 1 ' },
    });
    try {
      expect(await runner.run('secured', {})).toEqual({
        kind: 'completed',
        outputs: { userName: 'alice' },
      });
      expect(api.tokenRequests.length).toBeGreaterThan(0);
    } finally {
      await runner.close();
    }
  });

  it('is called with verification on when the runner trusts the certificate (ca)', async () => {
    const loaded = await loadArazzo(location, { tlsVerify: false });
    const runner = createRunner(loaded, { env: CREDENTIALS, ca: certificate });
    try {
      expect(await runner.run('secured', {})).toEqual({
        kind: 'completed',
        outputs: { userName: 'alice' },
      });
      expect(api.tokenRequests.length).toBeGreaterThan(0);
    } finally {
      await runner.close();
    }
  });

  it('is refused, token request and API call alike, for any other value', async () => {
    const loaded = await loadArazzo(location, { tlsVerify: false });
    const runner = createRunner(loaded, {
      env: { ...CREDENTIALS, ARAZZO_DISABLE_TLS_VERIFY: 'true' },
    });
    try {
      const secured = await runner.run('secured', {});
      expect(secured).toMatchObject({ kind: 'error', stepId: 'get' });
      if (secured.kind === 'error') {
        expect(secured.message).toMatch(
          /token request for security scheme "OAuth2" .*self[- ]signed certificate/,
        );
      }
      const open = await runner.run('open', {});
      expect(open).toMatchObject({ kind: 'error', stepId: 'ping' });
      if (open.kind === 'error')
        expect(open.message).toMatch(
          /GET https:\/\/127\.0\.0\.1:\d+\/scim2\/ping: .*self[- ]signed certificate/,
        );
    } finally {
      await runner.close();
    }
  });
});
