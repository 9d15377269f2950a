import { useTempDir } from '@mcp-identity/common/testing';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../src/store/db.js';
import { startTestIdp, userBody } from './helpers.js';

type Json = Record<string, unknown>;

const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const SEARCH = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';
const CUSTOM = 'urn:scim:schemas:extension:custom:User';
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';

const versionOf = (resource: Json) => (resource.meta as { version: string }).version;
const ids = (list: Json) => ((list.Resources as Json[] | undefined) ?? []).map((r) => r.id);

describe('SCIM ETags (RFC 7644 §3.14)', async () => {
  const idp = await startTestIdp();
  const patch = (path: string, operations: unknown[], ifMatch?: string) =>
    idp.scim('PATCH', path, {
      body: { schemas: [PATCH_OP], Operations: operations },
      ...(ifMatch === undefined ? {} : { headers: { 'if-match': ifMatch } }),
    });

  it('gives every user and group a weak version, in meta.version and the ETag header', async () => {
    const created = await idp.scim('POST', '/Users', { body: userBody('etag-user') });
    expect(created.status).toBe(201);
    const version = versionOf(created.body);
    expect(version).toMatch(/^W\/"\d+"$/);
    expect(created.headers.get('etag')).toBe(version);
    const id = created.body.id as string;
    const read = await idp.scim('GET', `/Users/${id}`);
    expect(read.headers.get('etag')).toBe(version);
    const patched = await patch(`/Users/${id}`, [{ op: 'replace', path: 'title', value: 'x' }]);
    expect(versionOf(patched.body)).not.toBe(version);
    expect(patched.headers.get('etag')).toBe(versionOf(patched.body));

    const group = await idp.scim('POST', '/Groups', { body: { displayName: 'etag-group' } });
    expect(group.headers.get('etag')).toBe(versionOf(group.body));
    // A membership change is a new version of the group and of the user (its `groups`).
    const before = versionOf((await idp.scim('GET', `/Users/${id}`)).body);
    const added = await patch(`/Groups/${group.body.id}`, [
      { op: 'add', path: 'members', value: [{ value: id }] },
    ]);
    expect(versionOf(added.body)).not.toBe(versionOf(group.body));
    expect(versionOf((await idp.scim('GET', `/Users/${id}`)).body)).not.toBe(before);
  });

  it('answers If-None-Match with the current version by 304 without a body', async () => {
    const created = await idp.scim('POST', '/Users', { body: userBody('etag-cached') });
    const path = `/Users/${created.body.id}`;
    const version = versionOf(created.body);
    const cached = await idp.scim('GET', path, { headers: { 'if-none-match': version } });
    expect(cached.status).toBe(304);
    expect(cached.text).toBe('');
    expect(cached.headers.get('etag')).toBe(version);
    const stale = await idp.scim('GET', path, { headers: { 'if-none-match': 'W/"0"' } });
    expect(stale.status).toBe(200);
    const group = await idp.scim('POST', '/Groups', { body: { displayName: 'etag-cached' } });
    const groupRead = await idp.scim('GET', `/Groups/${group.body.id}`, {
      headers: { 'if-none-match': `"x", ${versionOf(group.body)}` },
    });
    expect(groupRead.status).toBe(304);
  });

  it('refuses a PUT, PATCH or DELETE whose If-Match is stale with 412, and applies a current one', async () => {
    const created = await idp.scim('POST', '/Users', { body: userBody('etag-guarded') });
    const path = `/Users/${created.body.id}`;
    const first = versionOf(created.body);
    const updated = await patch(path, [{ op: 'replace', path: 'title', value: 'one' }], first);
    expect(updated.status).toBe(200);
    const stale = await patch(path, [{ op: 'replace', path: 'title', value: 'two' }], first);
    expect(stale.status).toBe(412);
    expect(stale.body).toEqual({
      schemas: [ERROR],
      status: '412',
      detail: expect.stringContaining(versionOf(updated.body)),
    });
    expect((await idp.scim('GET', path)).body.title).toBe('one');
    const put = await idp.scim('PUT', path, {
      body: userBody('etag-guarded', { title: 'three' }),
      headers: { 'if-match': first },
    });
    expect(put.status).toBe(412);
    const any = await patch(path, [{ op: 'replace', path: 'title', value: 'four' }], '*');
    expect(any.status).toBe(200);
    const deleteStale = await idp.scim('DELETE', path, { headers: { 'if-match': first } });
    expect(deleteStale.status).toBe(412);
    expect((await idp.scim('GET', path)).status).toBe(200);
    const deleted = await idp.scim('DELETE', path, {
      headers: { 'if-match': versionOf(any.body) },
    });
    expect(deleted.status).toBe(204);

    const group = await idp.scim('POST', '/Groups', { body: { displayName: 'etag-guarded' } });
    const groupPath = `/Groups/${group.body.id}`;
    const renamed = await patch(
      groupPath,
      [{ op: 'replace', path: 'displayName', value: 'etag-renamed' }],
      versionOf(group.body),
    );
    expect(renamed.status).toBe(200);
    const staleGroup = await idp.scim('DELETE', groupPath, {
      headers: { 'if-match': versionOf(group.body) },
    });
    expect(staleGroup.status).toBe(412);
    expect((await idp.scim('GET', groupPath)).body.displayName).toBe('etag-renamed');
  });

  it('lets exactly one of two concurrent writes with the same If-Match through', async () => {
    const created = await idp.scim('POST', '/Users', { body: userBody('etag-race') });
    const path = `/Users/${created.body.id}`;
    const version = versionOf(created.body);
    // Password changes hash between reading and writing: the window a lost update needs.
    const [a, b] = await Promise.all([
      patch(path, [{ op: 'replace', value: { title: 'a', password: 'Passw0rd!a' } }], version),
      patch(path, [{ op: 'replace', value: { title: 'b', password: 'Passw0rd!b' } }], version),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 412]);
    const winner = a.status === 200 ? a : b;
    const read = await idp.scim('GET', path);
    expect(read.body.title).toBe(winner.body.title);
    expect(versionOf(read.body)).toBe(versionOf(winner.body));

    const group = await idp.scim('POST', '/Groups', { body: { displayName: 'etag-race' } });
    const groupPath = `/Groups/${group.body.id}`;
    const [x, y] = await Promise.all(
      ['etag-race-x', 'etag-race-y'].map((name) =>
        patch(
          groupPath,
          [{ op: 'replace', path: 'displayName', value: name }],
          versionOf(group.body),
        ),
      ),
    );
    expect([x!.status, y!.status].sort()).toEqual([200, 412]);
  });

  it('gives the users and groups of a database from before versions a version', async () => {
    const dir = useTempDir('idp-old-db-')();
    const db = openDatabase(dir);
    // The schema as it was: no version columns, no triggers using them.
    for (const trigger of db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' AND sql LIKE '%version%'")
      .pluck()
      .all() as string[]) {
      db.exec(`DROP TRIGGER ${trigger}`);
    }
    db.exec('ALTER TABLE users DROP COLUMN version; ALTER TABLE groups_ DROP COLUMN version');
    const at = new Date().toISOString();
    db.prepare(
      `INSERT INTO users (id, kind, user_name, user_name_lc, doc, created_at, modified_at)
       VALUES ('old-user', 'user', 'old', 'old', '{"userName":"old","active":true}', ?, ?)`,
    ).run(at, at);
    db.close();
    const old = await startTestIdp({ dataDir: dir });
    const read = await old.scim('GET', '/Users/old-user');
    expect(read.status).toBe(200);
    expect(versionOf(read.body)).toBe('W/"1"');
    const patched = await old.scim('PATCH', '/Users/old-user', {
      body: { schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'title', value: 't' }] },
      headers: { 'if-match': 'W/"1"' },
    });
    expect(versionOf(patched.body)).toBe('W/"2"');
    const columns = new Database(`${dir}/idp.sqlite`, { readonly: true });
    expect(columns.prepare('SELECT version FROM users').pluck().get()).toBe(2);
    columns.close();
  });
});

describe('SCIM sorting (RFC 7644 §3.4.2.3)', async () => {
  const idp = await startTestIdp();
  const make = async (userName: string, extra: Json) => {
    const created = await idp.scim('POST', '/Users', { body: userBody(userName, extra) });
    expect(created.status).toBe(201);
    return created.body.id as string;
  };
  const b = await make('sort-b', {
    name: { familyName: 'beta' },
    emails: [
      { value: 'z@sort.example', type: 'home' },
      { value: 'a@sort.example', type: 'work', primary: true },
    ],
    [CUSTOM]: { customerTier: 'gold' },
  });
  const a = await make('Sort-A', {
    name: { familyName: 'Alpha' },
    emails: [{ value: 'm@sort.example', type: 'work' }],
    [CUSTOM]: { customerTier: 'Bronze' },
  });
  const c = await make('sort-c', {
    name: null,
    emails: [{ value: 'b@sort.example', type: 'work' }],
  });
  const list = async (query: string) => {
    const response = await idp.scim('GET', `/Users?${query}`);
    expect(response.status).toBe(200);
    return response.body;
  };
  // The three ways a search runs: a narrow comparison, the worker's SQL, and a value filter.
  const filters = {
    narrow: 'userName sw "sort-"',
    broad: 'userName sw "sort-" or userName eq "nobody"',
    valueFilter: 'emails[type eq "work" and value co "@sort.example"]',
  };

  for (const [path, filter] of Object.entries(filters)) {
    it(`sorts before paging, case-insensitively, missing values last (${path} search)`, async () => {
      const q = (sort: string) => `filter=${encodeURIComponent(filter)}&${sort}`;
      expect(ids(await list(q('sortBy=userName')))).toEqual([a, b, c]);
      expect(ids(await list(q('sortBy=userName&sortOrder=descending')))).toEqual([c, b, a]);
      expect(ids(await list(q('sortBy=name.familyName')))).toEqual([a, b, c]);
      expect(ids(await list(q('sortBy=name.familyName&sortOrder=descending')))).toEqual([c, b, a]);
      // emails: the primary value, else the first (b's primary is a@…).
      expect(ids(await list(q('sortBy=emails')))).toEqual([b, c, a]);
      expect(ids(await list(q(`sortBy=${CUSTOM}:customerTier`)))).toEqual([a, b, c]);
      expect(ids(await list(q('sortBy=meta.created&sortOrder=descending')))).toEqual([c, a, b]);
      const page = await list(q('sortBy=userName&startIndex=2&count=1'));
      expect(page).toMatchObject({ totalResults: 3, startIndex: 2, itemsPerPage: 1 });
      expect(ids(page)).toEqual([b]);
    });
  }

  it('sorts POST .search and the WSO2 spelling sortOder, and refuses unknown attributes', async () => {
    const search = await idp.scim('POST', '/Users/.search', {
      body: {
        schemas: [SEARCH],
        filter: filters.narrow,
        sortBy: 'name.familyName',
        sortOrder: 'descending',
      },
    });
    expect(ids(search.body)).toEqual([c, b, a]);
    expect(
      ids(
        await list(
          `filter=${encodeURIComponent(filters.narrow)}&sortBy=userName&sortOder=descending`,
        ),
      ),
    ).toEqual([c, b, a]);
    for (const query of [
      'sortBy=nothing',
      'sortBy=name',
      'sortBy=groups',
      'sortBy=userName&sortOrder=up',
    ]) {
      const refused = await idp.scim('GET', `/Users?${query}`);
      expect(refused.status).toBe(400);
      expect(refused.body.scimType).toBe('invalidValue');
    }
  });

  it('sorts groups and a root search across users and groups', async () => {
    for (const name of ['sort-g2', 'Sort-G1', 'sort-g3']) {
      await idp.scim('POST', '/Groups', { body: { displayName: name } });
    }
    const groups = await idp.scim(
      'GET',
      `/Groups?filter=${encodeURIComponent('displayName sw "sort-g"')}&sortBy=displayName&sortOrder=descending`,
    );
    expect((groups.body.Resources as Json[]).map((g) => g.displayName)).toEqual([
      'sort-g3',
      'sort-g2',
      'Sort-G1',
    ]);
    await make('sort-u1', { displayName: 'sort-g15' });
    await make('sort-u2', { displayName: 'sort-g0' });
    const root = await idp.scim('POST', '/.search', {
      body: { schemas: [SEARCH], filter: 'displayName sw "sort-g"', sortBy: 'displayName' },
    });
    expect((root.body.Resources as Json[]).map((r) => r.displayName)).toEqual([
      'sort-g0',
      'Sort-G1',
      'sort-g15',
      'sort-g2',
      'sort-g3',
    ]);
    const page = await idp.scim('POST', '/.search', {
      body: {
        schemas: [SEARCH],
        filter: 'displayName sw "sort-g"',
        sortBy: 'displayName',
        startIndex: 3,
        count: 2,
      },
    });
    expect(page.body).toMatchObject({ totalResults: 5, itemsPerPage: 2 });
    expect((page.body.Resources as Json[]).map((r) => r.displayName)).toEqual([
      'sort-g15',
      'sort-g2',
    ]);
    // userName is no Group attribute: the groups have no value and come last.
    const byUserName = await idp.scim('POST', '/.search', {
      body: { schemas: [SEARCH], filter: 'displayName sw "sort-g"', sortBy: 'userName' },
    });
    expect((byUserName.body.Resources as Json[]).map((r) => r.displayName).slice(0, 2)).toEqual([
      'sort-g15',
      'sort-g0',
    ]);
  });

  it('advertises sort and etag in ServiceProviderConfig', async () => {
    const config = await idp.scim('GET', '/ServiceProviderConfig', { token: '' });
    expect(config.body).toMatchObject({ sort: { supported: true }, etag: { supported: true } });
  });
});
