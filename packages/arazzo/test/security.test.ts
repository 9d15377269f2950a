import {
  createRunner,
  envBase,
  envPrefix,
  type LoadedArazzo,
  loadArazzo,
} from '@mcp-identity/arazzo';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FixtureApi, materialize, startFixtureApi } from './fixtures/api.js';

describe('environment variable names', () => {
  it('takes the first title word that is not a filler word, upper-cased and sanitised', () => {
    expect(envPrefix('SCIM 2.0 API')).toBe('SCIM');
    expect(envPrefix('AI Gateway API')).toBe('AI');
    expect(envPrefix('The OpenAPI Petstore')).toBe('PETSTORE');
    expect(envPrefix('my-service v2')).toBe('MY_SERVICE');
    expect(envPrefix('the api')).toBe('the');
    expect(envPrefix('')).toBe('');
  });

  it('joins the prefix and the sanitised scheme name', () => {
    expect(envBase('SCIM 2.0 API', 'OAuth2')).toBe('SCIM_OAUTH2');
    expect(envBase('SCIM 2.0 API', 'scim-oauth2')).toBe('SCIM_SCIM_OAUTH2');
    expect(envBase('', 'api key')).toBe('API_KEY');
  });
});

describe('apiKey, basic and bearer schemes', () => {
  let api: FixtureApi;
  let docs: ReturnType<typeof materialize>;
  let loaded: LoadedArazzo;

  beforeAll(async () => {
    api = await startFixtureApi();
    docs = materialize(['security.arazzo.yaml', 'scim.openapi.yaml'], api.url);
    loaded = await loadArazzo(docs.path('security.arazzo.yaml'));
  });
  afterAll(async () => {
    await api.close();
    docs.remove();
  });

  async function run(workflowId: string, env: Record<string, string>) {
    const runner = createRunner(loaded, { env });
    try {
      return await runner.run(workflowId, {});
    } finally {
      await runner.close();
    }
  }

  it('lists the variables each scheme reads', () => {
    expect(loaded.credentials.map((c) => [c.scheme, c.env])).toEqual([
      ['ApiKey', ['SCIM_APIKEY']],
      ['Basic', ['SCIM_BASIC_USERNAME', 'SCIM_BASIC_PASSWORD']],
      ['Bearer', ['SCIM_BEARER_TOKEN']],
    ]);
  });

  it('puts an API key in its header', async () => {
    expect(await run('apiKey', { SCIM_APIKEY: 'k-1' })).toEqual({ kind: 'completed', outputs: {} });
    expect(api.requests.at(-1)!.headers['x-api-key']).toBe('k-1');
  });

  it('sends HTTP basic credentials', async () => {
    await run('basic', { SCIM_BASIC_USERNAME: 'user', SCIM_BASIC_PASSWORD: 'p:w' });
    expect(api.requests.at(-1)!.headers.authorization).toBe(
      `Basic ${Buffer.from('user:p:w').toString('base64')}`,
    );
  });

  it('uses the first security alternative whose credentials are configured', async () => {
    await run('bearerOrKey', { SCIM_BEARER_TOKEN: 'b-1', SCIM_APIKEY: 'k-2' });
    expect(api.requests.at(-1)!.headers).toMatchObject({ authorization: 'Bearer b-1' });
    expect(api.requests.at(-1)!.headers['x-api-key']).toBeUndefined();
    await run('bearerOrKey', { SCIM_APIKEY: 'k-3' });
    expect(api.requests.at(-1)!.headers.authorization).toBeUndefined();
    expect(api.requests.at(-1)!.headers['x-api-key']).toBe('k-3');
  });
});
