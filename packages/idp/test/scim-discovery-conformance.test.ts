import { describe, expect, it } from 'vitest';
import { startTestIdp } from './helpers.js';
import { type Attribute, buildModel, type Model, modelClient } from './scim-model.js';

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
const BULK_REQUEST = 'urn:ietf:params:scim:api:messages:2.0:BulkRequest';
const BULK_RESPONSE = 'urn:ietf:params:scim:api:messages:2.0:BulkResponse';
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';

/** RFC 7643 §7: what a client may send (readOnly never; immutable only on creation). */
const writable = (a: Attribute) => a.mutability !== 'readOnly';
const hidden = (a: Attribute) => a.mutability === 'writeOnly' || a.returned === 'never';

/** Existing resources that generated references and reference-complex values point at. */
type Referents = Record<string, { id: string; location: string }>;

/** The resource type a complex attribute refers to through its `value` and `$ref` (members, manager). */
function referencedType(attribute: Attribute, referents: Referents): string | undefined {
  const ref = attribute.subAttributes?.get('$ref');
  return ref?.referenceTypes?.find((t) => t in referents);
}

/** A value of the attribute's type, different for each `n` (and unique with `tag`). */
function generate(attribute: Attribute, n: number, tag: string, referents: Referents): unknown {
  const single = generateSingle(attribute, n, tag, referents);
  return attribute.multiValued ? [single] : single;
}

function generateSingle(
  attribute: Attribute,
  n: number,
  tag: string,
  referents: Referents,
): unknown {
  const canonical = attribute.canonicalValues;
  if (canonical?.length) return canonical[n % canonical.length];
  switch (attribute.type) {
    case 'boolean':
      return n % 2 === 1;
    case 'integer':
      return 10 * n + 1;
    case 'decimal':
      return n + 0.5;
    case 'dateTime':
      return new Date(Date.UTC(2026, n, 1)).toISOString();
    case 'binary':
      return Buffer.from(`${attribute.name}${n}`).toString('base64');
    case 'reference': {
      const target = attribute.referenceTypes!.find((t) => t in referents);
      if (target) return referents[target]!.location;
      return attribute.referenceTypes!.includes('external')
        ? `https://example.com/${attribute.name}/${n}`
        : `urn:example:${attribute.name}:${n}`;
    }
    case 'complex': {
      const target = referencedType(attribute, referents);
      const value: Json = {};
      for (const sub of [...attribute.subAttributes!.values()].filter(writable)) {
        if (target && sub.name === 'value') value.value = referents[target]!.id;
        else if (target && sub.name === '$ref') value.$ref = referents[target]!.location;
        else value[sub.name] = generateSingle(sub, n, tag, referents);
      }
      return value;
    }
    default:
      // Short, without whitespace: group names are 3-30 non-whitespace characters (spec
      // §7.2) and passwords follow WSO2's policy.
      return `${attribute.name.slice(0, 8)}${n}${tag}`;
  }
}

/** A resource type's schemas (core first) with their models. */
type TypeModels = { core: string; schemas: [string, Model][] };

/** The writable attributes of every schema of the type, as a request body. */
function generateBody(
  type: TypeModels,
  n: number,
  tag: string,
  referents: Referents,
  keep?: (attribute: Attribute) => boolean,
  previous?: Json,
): Json {
  const body: Json = { schemas: type.schemas.map(([id]) => id) };
  for (const [id, model] of type.schemas) {
    const target: Json = id === type.core ? body : {};
    if (target !== body) body[id] = target;
    const before = (id === type.core ? previous : previous?.[id]) as Json | undefined;
    for (const attribute of model.values()) {
      if (!writable(attribute)) continue;
      target[attribute.name] =
        keep?.(attribute) && before
          ? before[attribute.name]
          : generate(attribute, n, tag, referents);
    }
  }
  return body;
}

/** Each written attribute's value and schema: `[schema, attribute, value]`. */
function writtenValues(type: TypeModels, body: Json): [string, Attribute, unknown][] {
  return type.schemas.flatMap(([id, model]) => {
    const source = (id === type.core ? body : body[id]) as Json;
    return [...model.values()]
      .filter((a) => a.name in source)
      .map((a): [string, Attribute, unknown] => [id, a, source[a.name]]);
  });
}

/** Problems of a response against what was written: default attributes equal, hidden ones absent. */
function roundTripProblems(type: TypeModels, body: Json, resource: Json): string[] {
  return writtenValues(type, body).flatMap(([id, attribute, value]) => {
    const holder = (id === type.core ? resource : resource[id]) as Json | undefined;
    const got = holder?.[attribute.name];
    const where = id === type.core ? attribute.name : `${id}:${attribute.name}`;
    if (hidden(attribute)) return got === undefined ? [] : [`${where} is returned`];
    if (attribute.returned === 'request') return [];
    return sameValue(attribute, value, got)
      ? []
      : [`${where}: wrote ${JSON.stringify(value)}, read ${JSON.stringify(got)}`];
  });
}

/** Equal, except for readOnly sub-attributes the server adds (a member's display). */
function sameValue(attribute: Attribute, written: unknown, read: unknown): boolean {
  if (attribute.multiValued) {
    return (
      Array.isArray(written) &&
      Array.isArray(read) &&
      written.length === read.length &&
      written.every((w, i) => sameValue({ ...attribute, multiValued: false }, w, read[i]))
    );
  }
  if (attribute.type !== 'complex') return JSON.stringify(written) === JSON.stringify(read);
  if (typeof read !== 'object' || read === null) return false;
  const w = written as Json;
  const r = read as Json;
  return (
    Object.keys(r).every((key) =>
      key in w
        ? sameValue(attribute.subAttributes!.get(key.toLowerCase())!, w[key], r[key])
        : attribute.subAttributes!.get(key.toLowerCase())?.mutability === 'readOnly',
    ) && Object.keys(w).every((key) => key in r)
  );
}

/**
 * `eq` filters on every written simple attribute and sub-attribute (RFC 7644 §3.4.2.2) that
 * the filter grammar can name: its ATTRNAME has no `$`, so `$ref` (RFC 7643 §2.1's exception
 * to the name rule) is not filterable.
 */
function equalityFilters(type: TypeModels, body: Json): string[] {
  const nameable = /^[A-Za-z][\w-]*$/;
  const literal = (v: unknown) => (typeof v === 'string' ? JSON.stringify(v) : String(v));
  return writtenValues(type, body).flatMap(([id, attribute, value]) => {
    if (hidden(attribute)) return [];
    const path = id === type.core ? attribute.name : `${id}:${attribute.name}`;
    if (attribute.type !== 'complex') return [`${path} eq ${literal(value)}`];
    const entry = (attribute.multiValued ? (value as Json[])[0] : value) as Json;
    return Object.entries(entry)
      .filter(([sub]) => nameable.test(sub))
      .map(([sub, v]) => `${path}.${sub} eq ${literal(v)}`);
  });
}

describe('SCIM discovery conformance: a client that builds its models from /Schemas', async () => {
  const idp = await startTestIdp();
  const client = await modelClient(idp);
  const { schemas, resourceTypes, models } = client;

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

  const check = (typeName: string, resource: Json) =>
    expect(client.problems(typeName, resource)).toEqual([]);
  const checkList = (typeName: string, list: Json) => {
    for (const resource of list.Resources as Json[]) check(typeName, resource);
  };
  const patch = (path: string, operations: unknown[], ifMatch?: string) =>
    idp.scim('PATCH', path, {
      body: { schemas: [PATCH_OP], Operations: operations },
      ...(ifMatch ? { headers: { 'if-match': ifMatch } } : {}),
    });
  const versionOf = (resource: Json) => (resource.meta as Json).version as string;
  /** A read, validated, with its ETag the resource's version (RFC 7644 §3.14). */
  const read = async (typeName: string, path: string) => {
    const response = await idp.scim('GET', path);
    expect(response.status).toBe(200);
    check(typeName, response.body);
    expect(response.headers.get('etag')).toBe(versionOf(response.body));
    return response.body;
  };
  /** A write with a stale If-Match: 412, the RFC's error, and the resource as it was. */
  const expectStale = async (
    typeName: string,
    path: string,
    write: (ifMatch: string) => ReturnType<typeof idp.scim>,
    stale: string,
  ) => {
    const before = await read(typeName, path);
    const refused = await write(stale);
    expect(refused.status).toBe(412);
    expect(refused.body).toMatchObject({ schemas: [ERROR], status: '412' });
    expect(refused.body).not.toHaveProperty('scimType');
    expect(await read(typeName, path)).toEqual(before);
  };
  /** A sorted listing (RFC 7644 §3.4.2.3), every resource validated; returns the values of `key`. */
  const sorted = async (typeName: string, endpoint: string, filter: string, sort: string) => {
    const list = await idp.scim(
      'GET',
      `${endpoint}?filter=${encodeURIComponent(filter)}&sortBy=${sort}`,
    );
    expect(list.status).toBe(200);
    checkList(typeName, list.body);
    return list.body.Resources as Json[];
  };
  /**
   * A Bulk request with one failing operation: every result has a string `status`
   * (RFC 7644 §3.7.3), the failure its SCIM error as `response`, the rest their location.
   */
  const bulkWithFailure = async (operations: Json[], failing: number, status: string) => {
    const response = await idp.scim('POST', '/Bulk', {
      body: { schemas: [BULK_REQUEST], Operations: operations },
    });
    expect(response.status).toBe(200);
    expect(response.body.schemas).toEqual([BULK_RESPONSE]);
    const results = response.body.Operations as Json[];
    expect(results).toHaveLength(operations.length);
    results.forEach((result, i) => {
      expect(typeof result.status).toBe('string');
      if (i !== failing) {
        expect(Number(result.status)).toBeLessThan(300);
        expect(result).not.toHaveProperty('response');
        return;
      }
      expect(result.status).toBe(status);
      expect(result.response).toMatchObject({
        schemas: [ERROR],
        status,
        detail: expect.any(String),
      });
    });
    return results;
  };
  const pathOf = (location: unknown) => String(location).replace(`${idp.url}/scim2`, '');

  it('round-trips every advertised writable attribute: written, read back, found by filter', async () => {
    const referent = await idp.scim('POST', '/Users', {
      body: { schemas: [CORE_USER], userName: 'rt-referent' },
    });
    const referentGroup = await idp.scim('POST', '/Groups', {
      body: { schemas: [GROUP], displayName: 'rt-referent' },
    });
    const at = (r: Json) => ({ id: r.id as string, location: (r.meta as Json).location as string });
    const referents: Referents = { User: at(referent.body), Group: at(referentGroup.body) };
    for (const resourceType of resourceTypes) {
      const type: TypeModels = {
        core: String(resourceType.schema),
        schemas: [
          String(resourceType.schema),
          ...((resourceType.schemaExtensions as Json[] | undefined) ?? []).map((e) =>
            String(e.schema),
          ),
        ].map((id) => [id, models.get(id)!]),
      };
      const endpoint = String(resourceType.endpoint);
      const name = String(resourceType.name);
      const tag = `rt${name.toLowerCase()}`;
      const verify = async (
        body: Json,
        response: { status: number; body: Json },
        status: number,
      ) => {
        expect(response.status, JSON.stringify(response.body)).toBe(status);
        check(name, response.body);
        expect(roundTripProblems(type, body, response.body)).toEqual([]);
        const read = await idp.scim('GET', `${endpoint}/${response.body.id}`);
        check(name, read.body);
        expect(roundTripProblems(type, body, read.body)).toEqual([]);
      };
      const findEach = async (body: Json, id: unknown) => {
        const missed: string[] = [];
        for (const filter of equalityFilters(type, body)) {
          const found = await idp.scim(
            'GET',
            `${endpoint}?count=200&filter=${encodeURIComponent(filter)}`,
          );
          if (found.status !== 200) missed.push(`${filter}: ${found.status} ${found.text}`);
          else if (!((found.body.Resources as Json[] | undefined) ?? []).some((r) => r.id === id)) {
            missed.push(`${filter}: not found`);
          } else checkList(name, found.body);
        }
        expect(missed).toEqual([]);
      };

      const first = generateBody(type, 1, tag, referents);
      const created = await idp.scim('POST', endpoint, { body: first });
      await verify(first, created, 201);
      const id = created.body.id;
      await findEach(first, id);

      // PATCH: a replace of every attribute that may change (immutable ones may not).
      const patchable = (a: Attribute) => a.mutability !== 'immutable';
      const second = generateBody(type, 2, tag, referents, (a) => !patchable(a), first);
      const operations = writtenValues(type, second)
        .filter(([, attribute]) => patchable(attribute))
        .map(([schemaId, attribute, value]) => ({
          op: 'replace',
          path: schemaId === type.core ? attribute.name : `${schemaId}:${attribute.name}`,
          value,
        }));
      await verify(second, await patch(`${endpoint}/${id}`, operations), 200);

      // PUT: every attribute anew, immutable ones as they were set.
      const third = generateBody(type, 3, tag, referents, (a) => !patchable(a), first);
      const replaced = await idp.scim('PUT', `${endpoint}/${id}`, { body: { ...third, id } });
      await verify(third, replaced, 200);
      await findEach(third, id);
    }
  });

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

    // A push guarded by the version read: the current one applies, a stale one is refused.
    const guarded = await patch(
      `/Groups/${groupId}`,
      [{ op: 'replace', path: 'externalId', value: 'push-1' }],
      versionOf(patched.body),
    );
    expect(guarded.status).toBe(200);
    check('Group', guarded.body);
    expect((await read('Group', `/Groups/${groupId}`)).externalId).toBe('push-1');
    await expectStale(
      'Group',
      `/Groups/${groupId}`,
      (ifMatch) => patch(`/Groups/${groupId}`, [{ op: 'remove', path: 'members' }], ifMatch),
      versionOf(patched.body),
    );

    // Bulk: a second group created, and a member add naming no user refused.
    const results = await bulkWithFailure(
      [
        { method: 'POST', path: '/Groups', bulkId: 'g2', data: { displayName: 'pushers-2' } },
        {
          method: 'PATCH',
          path: `/Groups/${groupId}`,
          data: {
            schemas: [PATCH_OP],
            Operations: [{ op: 'add', path: 'members', value: [{ value: 'no-such-user' }] }],
          },
        },
      ],
      1,
      '400',
    );
    const second = await read('Group', pathOf(results[0]!.location));
    expect(second.displayName).toBe('pushers-2');
    expect(results[0]!.version).toBe(versionOf(second));
    expect(
      ((await read('Group', `/Groups/${groupId}`)).members as Json[]).map((m) => m.value),
    ).toEqual([userId]);
    const byName = await sorted(
      'Group',
      '/Groups',
      'displayName sw "pushers"',
      'displayName&sortOrder=descending',
    );
    expect(byName.map((g) => g.displayName)).toEqual(['pushers-2', 'pushers']);

    const pusher = await read('User', `/Users/${userId}`);
    expect(pusher.groups).toEqual([expect.objectContaining({ value: groupId })]);
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
    const current = await read('User', `/Users/${id}`);
    expect(current[ENTERPRISE]).toMatchObject({
      department: 'Ops',
      division: 'North',
      manager: { value: managerId },
    });
    // An update guarded by the version read, then one with the version from before it.
    const titled = await patch(
      `/Users/${id}`,
      [{ op: 'Replace', path: 'title', value: 'Lead' }],
      versionOf(current),
    );
    expect(titled.status).toBe(200);
    check('User', titled.body);
    expect((await read('User', `/Users/${id}`)).title).toBe('Lead');
    await expectStale(
      'User',
      `/Users/${id}`,
      (ifMatch) =>
        patch(`/Users/${id}`, [{ op: 'Replace', path: 'title', value: 'Lost' }], ifMatch),
      versionOf(current),
    );
    const byName = await sorted(
      'User',
      '/Users/',
      'userName sw "entra-"',
      'userName&sortOrder=descending',
    );
    expect(byName.map((u) => u.id)).toEqual([id, managerId]);

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

    // Bulk: one more user created and added, a delete of an unknown user refused.
    const results = await bulkWithFailure(
      [
        {
          method: 'POST',
          path: '/Users',
          bulkId: 'e2',
          data: { schemas: [CORE_USER], userName: 'entra-bulk@example.com', active: 'True' },
        },
        { method: 'DELETE', path: '/Users/00000000-0000-4000-8000-000000000000' },
        {
          method: 'PATCH',
          path: `/Groups/${groupId}`,
          data: {
            schemas: [PATCH_OP],
            Operations: [{ op: 'Add', path: 'members', value: [{ value: 'bulkId:e2' }] }],
          },
        },
      ],
      1,
      '404',
    );
    const bulkUser = await read('User', pathOf(results[0]!.location));
    expect(bulkUser).toMatchObject({ userName: 'entra-bulk@example.com', active: true });
    const members = (await read('Group', `/Groups/${groupId}`)).members as Json[];
    expect(members.map((m) => m.value).sort()).toEqual([id, bulkUser.id].sort());
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
    const current = await read('User', `/Users/${id}`);
    expect(current).toMatchObject({ active: false, title: 'Engineer' });
    expect(current).not.toHaveProperty('name');
    // Okta's PUT, guarded by the version it read; the same PUT again is stale.
    const put = (ifMatch: string) =>
      idp.scim('PUT', `/Users/${id}`, {
        body: { schemas: [CORE_USER], id, userName: 'okta-user', active: false, title: 'Staff' },
        headers: { 'if-match': ifMatch },
      });
    const guarded = await put(versionOf(current));
    expect(guarded.status).toBe(200);
    check('User', guarded.body);
    expect((await read('User', `/Users/${id}`)).title).toBe('Staff');
    await expectStale('User', `/Users/${id}`, put, versionOf(current));

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
    expect((await read('Group', `/Groups/${group.body.id}`)).displayName).toBe('okta-renamed');

    // Bulk: a second user, and a duplicate of the first refused with uniqueness.
    const results = await bulkWithFailure(
      [
        {
          method: 'POST',
          path: '/Users',
          bulkId: 'o2',
          data: { schemas: [CORE_USER], userName: 'okta-user-2' },
        },
        {
          method: 'POST',
          path: '/Users',
          bulkId: 'dup',
          data: { schemas: [CORE_USER], userName: 'OKTA-USER' },
        },
      ],
      1,
      '409',
    );
    expect(results[1]!.response).toMatchObject({ scimType: 'uniqueness' });
    expect(await read('User', pathOf(results[0]!.location))).toMatchObject({ active: true });
    const byTitle = await sorted('User', '/Users', 'userName sw "okta-user"', 'title');
    // okta-user has a title, okta-user-2 none: without a value sorts last (RFC 7644 §3.4.2.3).
    expect(byTitle.map((u) => u.userName)).toEqual(['okta-user', 'okta-user-2']);
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
