import { beforeAll, describe, expect, it } from 'vitest';
import {
  NOT_PERMITTED,
  READ_ONLY,
  type ScimHarness,
  seedUser,
  startScimHarness,
  userBody,
} from './support/harness.js';

let h: ScimHarness;
let ownerId: string;

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
const AGENT_SCHEMA = 'urn:scim:wso2:agent:schema';

beforeAll(async () => {
  // Token requests are the subject of shape-and-tokens.test.ts; here they would only cost time.
  h = await startScimHarness({ tokenCache: true });
  ownerId = await seedUser(h, 'agent-owner');
});

async function seedAgent(displayName: string) {
  const created = await h.scim('POST', '/Agents', {
    [AGENT_SCHEMA]: {
      DisplayName: displayName,
      Description: 'seeded',
      Owner: `${ownerId}@carbon.super`,
    },
  });
  if (created.status !== 201) throw new Error(`seed agent ${displayName}: ${created.status}`);
  return created.body;
}

describe('list_agents', () => {
  it('returns a page of the agents the IdP holds', async () => {
    const seeded = await seedAgent('Listed Agent');
    const result = await h.call('list_agents', { startIndex: 1, count: 100 });
    const listed = await h.scim('GET', '/Agents?startIndex=1&count=100');
    expect(result.outputs.totalResults).toBe(listed.body.totalResults);
    const ids = (result.outputs.agents as { id: string }[]).map((a) => a.id);
    expect(ids).toContain(seeded.id);
    expect(result.outputs.error).toBeNull();
  });

  it('rejects a missing input before running the workflow', async () => {
    h.proxy.reset();
    const result = await h.call('list_agents', { count: 10 });
    expect(result.isError).toBe(true);
    expect(result.text).toContain('Invalid arguments for tool list_agents');
    expect(h.proxy.requests).toEqual([]);
  });
});

describe('create_agent', () => {
  it('creates the agent and returns only its id and userName, never the password', async () => {
    // The IdP's own creation response carries the generated password: the tool must drop it.
    const direct = await seedAgent('Direct Agent');
    expect(direct.password).toEqual(expect.any(String));

    const result = await h.call('create_agent', {
      displayName: 'Billing Assistant',
      description: 'Answers billing questions',
      owner: `${ownerId}@carbon.super`,
    });
    const { id, userName } = result.outputs as { id: string; userName: string };
    expect(result.outputs).toEqual({ id, userName, error: null, errorStatus: null });
    expect(result.text).toBe(
      `Workflow Success. Outputs: {'id': '${id}', 'userName': '${userName}', 'error': None, 'errorStatus': None}`,
    );
    expect(result.text.toLowerCase()).not.toContain('password');

    const stored = await h.scim('GET', `/Agents/${id}`);
    expect(stored.status).toBe(200);
    expect(stored.body.userName).toBe(userName);
    expect(stored.body[AGENT_SCHEMA]).toMatchObject({
      DisplayName: 'Billing Assistant',
      Description: 'Answers billing questions',
      Owner: `${ownerId}@carbon.super`,
    });
  });

  it('reports a refusal for lack of permission as error 403, creating nothing', async () => {
    const readOnly = await h.connectAs(READ_ONLY);
    const before = (await h.scim('GET', '/Agents?startIndex=1&count=100')).body.totalResults;
    const result = await readOnly.call('create_agent', {
      displayName: 'Not Allowed',
      description: 'refused',
      owner: `${ownerId}@carbon.super`,
    });
    expect(result.isError).toBe(false);
    expect(result.text).toBe(
      `Workflow Success. Outputs: {'id': None, 'userName': None, 'error': '${NOT_PERMITTED}', 'errorStatus': 403}`,
    );
    expect((await h.scim('GET', '/Agents?startIndex=1&count=100')).body.totalResults).toBe(before);
  });
});

describe('delete_agent', () => {
  it('deletes the agent', async () => {
    const seeded = await seedAgent('Doomed Agent');
    const result = await h.call('delete_agent', { agentId: seeded.id });
    expect(result.text).toBe(
      "Workflow Success. Outputs: {'statusCode': 204, 'error': None, 'errorStatus': None}",
    );
    expect((await h.scim('GET', `/Agents/${seeded.id}`)).status).toBe(404);
  });

  it('reports an unknown agent as error 404', async () => {
    const result = await h.call('delete_agent', { agentId: UNKNOWN_ID });
    expect(result.outputs).toMatchObject({ statusCode: 404, errorStatus: '404' });
    expect(result.outputs.error).toEqual(expect.any(String));
  });
});

type BulkResult = {
  bulkId: string;
  location?: string;
  status: string;
  response?: Record<string, unknown>;
};

const bulkCreate = (bulkId: string, userName: string) => ({
  method: 'POST',
  path: '/Users',
  bulkId,
  data: userBody(userName),
});

describe('bulk_create_users', () => {
  it('creates every user of the request', async () => {
    const result = await h.call('bulk_create_users', {
      operations: JSON.stringify([bulkCreate('b1', 'bulk-one'), bulkCreate('b2', 'bulk-two')]),
    });
    expect(result.isError).toBe(false);
    expect(result.outputs).toMatchObject({ error: null, errorStatus: null });
    const results = result.outputs.results as BulkResult[];
    expect(results.map((r) => [r.bulkId, r.status])).toEqual([
      ['b1', '201'],
      ['b2', '201'],
    ]);
    for (const userName of ['bulk-one', 'bulk-two']) {
      const found = await h.scim('POST', '/Users/.search', {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'],
        filter: `userName eq ${userName}`,
      });
      const users = found.body.Resources as { id: string }[];
      expect(users).toHaveLength(1);
      expect(results.some((r) => r.location?.endsWith(`/Users/${users[0]?.id}`))).toBe(true);
    }
    expect(result.text).not.toContain('Passw0rd');
  });

  it('reports a failed entry inside results', async () => {
    await seedUser(h, 'bulk-taken');
    const result = await h.call('bulk_create_users', {
      operations: JSON.stringify([bulkCreate('dup', 'bulk-taken'), bulkCreate('ok', 'bulk-fresh')]),
    });
    const results = result.outputs.results as BulkResult[];
    const failed = results.find((r) => r.bulkId === 'dup');
    expect(failed?.status).toBe('409');
    expect(failed?.response).toMatchObject({ status: '409', scimType: 'uniqueness' });
    expect(results.find((r) => r.bulkId === 'ok')?.status).toBe('201');
  });

  it('cannot delete: the token only holds internal_bulk_user_create', async () => {
    const victimId = await seedUser(h, 'bulk-victim');
    const result = await h.call('bulk_create_users', {
      operations: JSON.stringify([{ method: 'DELETE', path: `/Users/${victimId}` }]),
    });
    expect(result.isError).toBe(false);
    const results = result.outputs.results as BulkResult[];
    expect(results.map((r) => r.status)).toEqual(['403']);
    expect((await h.scim('GET', `/Users/${victimId}`)).status).toBe(200);
  });

  it('sets error when the whole request is refused', async () => {
    const result = await h.call('bulk_create_users', {
      operations: JSON.stringify([
        { method: 'POST', path: '/Users', data: userBody('no-bulk-id') },
      ]),
    });
    expect(result.isError).toBe(false);
    expect(result.outputs).toMatchObject({ results: null, errorStatus: '400' });
    expect(result.outputs.error).toBe(
      'Bulk request error. Required attribute BULK_ID is missing in the request',
    );
  });
});
