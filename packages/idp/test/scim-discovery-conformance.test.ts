import { describe, expect, it } from 'vitest';
import { startTestIdp } from './helpers.js';

/**
 * The IdP as a generic SCIM client sees it: models built from /Schemas and /ResourceTypes the
 * way model-building client libraries do (types, referenceTypes, sub-attributes, mutability),
 * then every response checked against those models (RFC 7643 §2, §7).
 */

type Json = Record<string, unknown>;

const CORE_USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const AGENT = 'urn:scim:wso2:agent:schema';
const SEARCH = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';

const TYPES = ['string', 'boolean', 'decimal', 'integer', 'dateTime', 'binary', 'reference'];
const MUTABILITY = ['readOnly', 'readWrite', 'immutable', 'writeOnly'];
const RETURNED = ['always', 'never', 'default', 'request'];
const UNIQUENESS = ['none', 'server', 'global'];

type Attribute = {
  name: string;
  type: string;
  multiValued: boolean;
  required: boolean;
  caseExact: boolean;
  mutability: string;
  returned: string;
  uniqueness: string;
  referenceTypes?: string[];
  subAttributes?: Map<string, Attribute>;
};

/** Attributes by lower-cased name, as RFC 7643 §2.1 makes names case-insensitive. */
type Model = Map<string, Attribute>;

/** Builds one attribute, throwing (as such libraries do) on any missing characteristic. */
function buildAttribute(raw: Json, where: string, isSub: boolean): Attribute {
  const fail = (why: string) => {
    throw new Error(`${where}: ${why}`);
  };
  if (typeof raw.name !== 'string') fail('no name');
  const type = raw.type as string;
  if (!TYPES.includes(type) && !(type === 'complex' && !isSub)) fail(`bad type ${type}`);
  for (const flag of ['multiValued', 'required', 'caseExact']) {
    if (typeof raw[flag] !== 'boolean') fail(`no ${flag}`);
  }
  if (!MUTABILITY.includes(raw.mutability as string)) fail('bad mutability');
  if (!RETURNED.includes(raw.returned as string)) fail('bad returned');
  if (!UNIQUENESS.includes(raw.uniqueness as string)) fail('bad uniqueness');
  const attribute: Attribute = {
    name: raw.name as string,
    type,
    multiValued: raw.multiValued as boolean,
    required: raw.required as boolean,
    caseExact: raw.caseExact as boolean,
    mutability: raw.mutability as string,
    returned: raw.returned as string,
    uniqueness: raw.uniqueness as string,
  };
  if (type === 'reference') {
    const refs = raw.referenceTypes;
    // RFC 7643 §2.3.7 / §7: a reference names the resource types it may point at.
    if (!Array.isArray(refs) || refs.length === 0) fail('reference without referenceTypes');
    attribute.referenceTypes = refs as string[];
  }
  if (type === 'complex') {
    const subs = raw.subAttributes;
    if (!Array.isArray(subs) || subs.length === 0) fail('complex without subAttributes');
    attribute.subAttributes = new Map(
      (subs as Json[]).map((s) => [
        String(s.name).toLowerCase(),
        buildAttribute(s, `${where}.${String(s.name)}`, true),
      ]),
    );
  }
  return attribute;
}

function buildModel(schema: Json): Model {
  return new Map(
    (schema.attributes as Json[]).map((a) => [
      String(a.name).toLowerCase(),
      buildAttribute(a, `${String(schema.id)}:${String(a.name)}`, false),
    ]),
  );
}

/** Checks one attribute value against its definition; returns the problems found. */
function valueProblems(attribute: Attribute, value: unknown, where: string): string[] {
  if (attribute.returned === 'never') return [`${where} is returned although returned=never`];
  if (attribute.multiValued) {
    if (!Array.isArray(value)) return [`${where} must be an array`];
    return value.flatMap((v, i) => singleProblems(attribute, v, `${where}[${i}]`));
  }
  return singleProblems(attribute, value, where);
}

function singleProblems(attribute: Attribute, value: unknown, where: string): string[] {
  switch (attribute.type) {
    case 'complex': {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        return [`${where} must be an object`];
      }
      return Object.entries(value as Json).flatMap(([key, v]) => {
        const sub = attribute.subAttributes!.get(key.toLowerCase());
        return sub ? valueProblems(sub, v, `${where}.${key}`) : [`${where}.${key} not advertised`];
      });
    }
    case 'boolean':
      return typeof value === 'boolean' ? [] : [`${where} must be a boolean`];
    case 'integer':
      return Number.isInteger(value) ? [] : [`${where} must be an integer`];
    case 'dateTime':
      return typeof value === 'string' && !Number.isNaN(Date.parse(value))
        ? []
        : [`${where} must be a dateTime`];
    default:
      return typeof value === 'string' ? [] : [`${where} must be a string`];
  }
}

/** Every problem of one resource against its resource type's schema and extensions. */
function resourceProblems(models: Map<string, Model>, type: Json, resource: Json): string[] {
  const core = models.get(String(type.schema))!;
  const extensions = ((type.schemaExtensions as Json[] | undefined) ?? []).map((e) =>
    String(e.schema),
  );
  const problems: string[] = [];
  for (const [key, value] of Object.entries(resource)) {
    if (key === 'schemas' || key === 'meta') continue;
    const extension = extensions.find((urn) => urn.toLowerCase() === key.toLowerCase());
    if (extension) {
      for (const [name, v] of Object.entries(value as Json)) {
        const attribute = models.get(extension)!.get(name.toLowerCase());
        if (attribute) problems.push(...valueProblems(attribute, v, `${extension}:${name}`));
        else problems.push(`${extension}:${name} not advertised`);
      }
      continue;
    }
    const attribute = core.get(key.toLowerCase());
    if (attribute) problems.push(...valueProblems(attribute, value, key));
    else problems.push(`${key} not advertised`);
  }
  for (const attribute of core.values()) {
    if (attribute.returned === 'always' && !(attribute.name in resource)) {
      problems.push(`${attribute.name} is returned=always but missing`);
    }
  }
  return problems;
}

describe('SCIM discovery conformance: a client that builds its models from /Schemas', async () => {
  const idp = await startTestIdp();
  const schemas = (await idp.scim('GET', '/Schemas')).body.Resources as Json[];
  const resourceTypes = (await idp.scim('GET', '/ResourceTypes', { token: '' })).body
    .Resources as Json[];
  const typeOf = (name: string) => resourceTypes.find((t) => t.name === name)!;

  it('builds a model of every advertised schema: every characteristic of RFC 7643 §7 given', () => {
    const models = new Map(schemas.map((s) => [String(s.id), buildModel(s)]));
    for (const type of resourceTypes) {
      expect(models.has(String(type.schema))).toBe(true);
      for (const extension of (type.schemaExtensions as Json[] | undefined) ?? []) {
        expect(models.has(String(extension.schema))).toBe(true);
      }
    }
    const members = models.get(GROUP)!.get('members')!.subAttributes!;
    expect(members.get('$ref')).toMatchObject({ referenceTypes: ['User', 'Group'] });
    expect(members.get('display')!.mutability).toBe('readOnly');
    expect(members.has('type')).toBe(true);
    expect(models.get(CORE_USER)!.get('groups')!.subAttributes!.get('$ref')).toMatchObject({
      type: 'reference',
      referenceTypes: ['Group'],
    });
  });

  const models = new Map(schemas.map((s) => [String(s.id), buildModel(s)]));
  const check = (typeName: string, resource: Json) =>
    expect(resourceProblems(models, typeOf(typeName), resource)).toEqual([]);
  const checkList = (typeName: string, list: Json) => {
    for (const resource of list.Resources as Json[]) check(typeName, resource);
  };
  const patch = (path: string, operations: unknown[]) =>
    idp.scim('PATCH', path, { body: { schemas: [PATCH_OP], Operations: operations } });

  it('validates every response of a group-push cycle against the models', async () => {
    const user = await idp.scim('POST', '/Users', {
      body: {
        schemas: [CORE_USER],
        userName: 'pusher',
        name: { givenName: 'Push', familyName: 'Er' },
        emails: [{ value: 'pusher@example.com', type: 'work', primary: true }],
      },
    });
    expect(user.status).toBe(201);
    check('User', user.body);
    const userId = user.body.id as string;

    // Okta's and Microsoft's pushes send a member display that is not the userName, and a type.
    const group = await idp.scim('POST', '/Groups', {
      body: {
        schemas: [GROUP],
        displayName: 'pushers',
        members: [{ value: userId, display: 'Push Er', type: 'User' }],
      },
    });
    expect(group.status).toBe(201);
    check('Group', group.body);
    expect(group.body.members).toEqual([
      {
        value: userId,
        display: 'pusher',
        type: 'User',
        $ref: `${idp.url}/scim2/Users/${userId}`,
      },
    ]);
    const groupId = group.body.id as string;

    const replaced = await idp.scim('PUT', `/Groups/${groupId}`, {
      body: {
        schemas: [GROUP],
        displayName: 'pushers',
        members: [{ value: userId, display: 'someone else' }],
      },
    });
    expect(replaced.status).toBe(200);
    check('Group', replaced.body);

    const patched = await idp.scim('PATCH', `/Groups/${groupId}`, {
      body: {
        schemas: [PATCH_OP],
        Operations: [
          {
            op: 'replace',
            path: 'members',
            value: [{ value: userId, display: 'x', type: 'User' }],
          },
        ],
      },
    });
    expect(patched.status).toBe(200);
    check('Group', patched.body);
    expect((patched.body.members as Json[]).map((m) => m.display)).toEqual(['pusher']);

    const read = await idp.scim('GET', `/Users/${userId}`);
    check('User', read.body);
    expect(read.body.groups).toEqual([expect.objectContaining({ value: groupId })]);
    const list = await idp.scim('GET', '/Groups');
    for (const resource of list.body.Resources as Json[]) check('Group', resource);
  });

  it('replays an Entra ID cycle, checking the state after every step', async () => {
    const manager = await idp.scim('POST', '/Users/', {
      body: { schemas: [CORE_USER], userName: 'entra-boss', active: true },
    });
    expect(manager.status).toBe(201);
    const managerId = manager.body.id as string;

    // Entra's create: trailing slash, enterprise extension, an attribute it has no value for.
    const created = await idp.scim('POST', '/Users/', {
      body: {
        schemas: [CORE_USER, ENTERPRISE],
        externalId: 'entra-1',
        userName: 'entra-user@example.com',
        active: 'True',
        displayName: 'Entra User',
        nickName: null,
        notAnAttribute: null,
        [ENTERPRISE]: { department: 'Ops', costCenter: null },
      },
    });
    expect(created.status).toBe(201);
    check('User', created.body);
    expect(created.body).toMatchObject({ active: true, [ENTERPRISE]: { department: 'Ops' } });
    expect(created.body).not.toHaveProperty('nickName');
    const id = created.body.id as string;

    const found = await idp.scim(
      'GET',
      `/Users?filter=${encodeURIComponent('userName eq "entra-user@example.com"')}`,
    );
    expect(found.body.totalResults).toBe(1);
    checkList('User', found.body);

    const duplicate = await idp.scim('POST', '/Users', {
      body: { schemas: [CORE_USER], userName: 'ENTRA-USER@example.com' },
    });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body.scimType).toBe('uniqueness');

    // Entra's documented manager update uses the unqualified path "manager".
    const managed = await patch(`/Users/${id}`, [
      { op: 'Add', path: 'manager', value: managerId },
      {
        op: 'Replace',
        path: ENTERPRISE,
        value: { schemas: [ENTERPRISE], division: 'North' },
      },
    ]);
    expect(managed.status).toBe(200);
    check('User', managed.body);
    const read = await idp.scim('GET', `/Users/${id}`);
    expect(read.body[ENTERPRISE]).toMatchObject({
      department: 'Ops',
      division: 'North',
      manager: { value: managerId },
    });

    const disabled = await patch(`/Users/${id}`, [
      { op: 'Replace', path: 'active', value: 'False' },
    ]);
    expect(disabled.status).toBe(200);
    expect((await idp.scim('GET', `/Users/${id}`)).body.active).toBe(false);
    const inactive = await idp.scim(
      'GET',
      `/Users/?filter=${encodeURIComponent('active eq false')}`,
    );
    expect((inactive.body.Resources as Json[]).map((u) => u.id)).toEqual([id]);

    const group = await idp.scim('POST', '/Groups/', {
      body: { schemas: [GROUP], displayName: 'entra-group', externalId: 'g-1' },
    });
    expect(group.status).toBe(201);
    const groupId = group.body.id as string;
    const added = await patch(`/Groups/${groupId}`, [
      { op: 'Add', path: 'members', value: [{ value: id }, { value: managerId }] },
    ]);
    expect(added.status).toBe(200);
    check('Group', added.body);
    const removed = await patch(`/Groups/${groupId}`, [
      { op: 'Remove', path: 'members', value: [{ value: managerId }] },
    ]);
    expect((removed.body.members as Json[]).map((m) => m.value)).toEqual([id]);
    const groups = await idp.scim(
      'GET',
      `/Groups/?filter=${encodeURIComponent(`members.value eq "${id}"`)}`,
    );
    expect((groups.body.Resources as Json[]).map((g) => g.id)).toEqual([groupId]);
    checkList('Group', groups.body);
  });

  it('replays an Okta cycle, checking the state after every step', async () => {
    // Okta creates without `active` and checks for active: true.
    const created = await idp.scim('POST', '/Users', {
      body: {
        schemas: [CORE_USER],
        userName: 'okta-user',
        name: { givenName: 'Okta', familyName: 'User', middleName: null },
        emails: [{ value: 'okta@example.com', type: 'work', primary: true }],
      },
    });
    expect(created.status).toBe(201);
    check('User', created.body);
    expect(created.body.active).toBe(true);
    const id = created.body.id as string;

    const replaced = await idp.scim('PUT', `/Users/${id}`, {
      body: {
        schemas: [CORE_USER],
        id,
        userName: 'okta-user',
        active: false,
        nickName: null,
        title: 'Engineer',
        emails: [{ value: 'okta@example.com', type: 'work', primary: true }],
      },
    });
    expect(replaced.status).toBe(200);
    check('User', replaced.body);
    const read = await idp.scim('GET', `/Users/${id}`);
    expect(read.body).toMatchObject({ active: false, title: 'Engineer' });
    expect(read.body).not.toHaveProperty('name');

    const reactivated = await patch(`/Users/${id}`, [{ op: 'replace', value: { active: true } }]);
    expect(reactivated.body.active).toBe(true);

    const group = await idp.scim('POST', '/Groups', {
      body: {
        schemas: [GROUP],
        displayName: 'okta-group',
        members: [{ value: id, display: 'Okta User' }],
      },
    });
    expect(group.status).toBe(201);
    check('Group', group.body);
    expect(group.body.members).toEqual([
      expect.objectContaining({ value: id, display: 'okta-user' }),
    ]);
    const renamed = await patch(`/Groups/${group.body.id}`, [
      { op: 'replace', value: { id: group.body.id, displayName: 'okta-renamed' } },
    ]);
    expect(renamed.body.displayName).toBe('okta-renamed');
    check('Group', renamed.body);
  });

  it('answers a root search over Users and Groups, paged across both (RFC 7644 §3.4.3)', async () => {
    const search = (body: Json, token?: string) =>
      idp.scim('POST', '/.search', {
        body: { schemas: [SEARCH], ...body },
        ...(token === undefined ? {} : { token }),
      });
    const byName = await search({ filter: 'displayName sw "root-"' });
    expect(byName.status).toBe(200);
    expect(byName.body.totalResults).toBe(0);
    const user = await idp.scim('POST', '/Users', {
      body: { schemas: [CORE_USER], userName: 'root-user', displayName: 'root-user' },
    });
    const group = await idp.scim('POST', '/Groups', { body: { displayName: 'root-group' } });
    const both = await search({ filter: 'displayName sw "root-"' });
    expect(both.body.totalResults).toBe(2);
    expect((both.body.Resources as Json[]).map((r) => r.id)).toEqual([user.body.id, group.body.id]);
    const second = await search({ filter: 'displayName sw "root-"', startIndex: 2, count: 1 });
    expect((second.body.Resources as Json[]).map((r) => r.id)).toEqual([group.body.id]);
    check('Group', (second.body.Resources as Json[])[0]!);
    // userName is not a Group attribute: the groups simply do not match.
    const users = await search({ filter: 'userName eq "root-user"', attributes: ['userName'] });
    expect(users.body.Resources).toEqual([
      { schemas: expect.any(Array), id: user.body.id, userName: 'root-user' },
    ]);
    expect((await search({ filter: 'nothing eq "x"' })).status).toBe(400);
    const usersOnly = await idp.token(['internal_user_mgt_list']);
    expect((await search({}, usersOnly)).status).toBe(403);
  });

  it("refuses an agent without the agent schema's required DisplayName and Owner", async () => {
    const noOwner = await idp.scim('POST', '/Agents', {
      body: { [AGENT]: { DisplayName: 'Bot' } },
    });
    expect(noOwner.status).toBe(400);
    expect(noOwner.body).toMatchObject({
      scimType: 'invalidValue',
      detail: `Required attribute ${AGENT}:Owner is missing in the SCIM Object.`,
    });
    expect((await idp.scim('POST', '/Agents', { body: {} })).status).toBe(400);
    const agentSchema = schemas.find((s) => s.id === AGENT)!;
    const required = (agentSchema.attributes as Json[]).filter((a) => a.required);
    expect(required.map((a) => a.name)).toEqual(['DisplayName', 'Owner']);
  });
});
