import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createApp, createLogger, type RunningServer, scimErrorBody } from '@mcp-identity/common';
import { startTestServer } from '@mcp-identity/common/testing';

export const CLIENT_ID = 'scim-client';
export const CLIENT_SECRET = 'scim-secret';

/** Credentials the workflows find under the names derived from "SCIM 2.0 API" + "OAuth2". */
export const FIXTURE_ENV = {
  SCIM_OAUTH2_CLIENT_ID: CLIENT_ID,
  SCIM_OAUTH2_CLIENT_SECRET: CLIENT_SECRET,
};

export interface FixtureApi extends RunningServer {
  /** Scopes of every token request, in order. */
  readonly tokenScopes: string[];
  /** The form of every token request, in order. */
  readonly tokenForms: Record<string, string>[];
  /** The bearer token of every /scim2 request, in order. */
  readonly apiTokens: string[];
}

export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';

/** A token exchange whose subject token's `sub` is this one is refused with invalid_grant. */
export const REFUSED_SUBJECT = 'disabled-user';

function subjectOf(jwt: string | undefined): unknown {
  try {
    return JSON.parse(Buffer.from(String(jwt).split('.')[1] ?? '', 'base64url').toString()).sub;
  } catch {
    return undefined;
  }
}

interface User {
  id: string;
  userName: string;
  name?: { givenName: string };
}

/**
 * A small SCIM-like API with a client-credentials token endpoint, enough for the fixture
 * workflows: list/search, get, create and delete users.
 */
export async function startFixtureApi(): Promise<FixtureApi> {
  const app = createApp({ logger: createLogger({ level: 'silent', pretty: false }) });
  const tokenScopes: string[] = [];
  const tokenForms: Record<string, string>[] = [];
  const apiTokens: string[] = [];
  const issued = new Set<string>();
  const users = new Map<string, User>([
    ['u1', { id: 'u1', userName: 'alice' }],
    ['u2', { id: 'u2', userName: 'oneil', name: { givenName: "O'Neil" } }],
  ]);
  let nextId = 3;

  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    (_r, body, done) => done(null, Object.fromEntries(new URLSearchParams(String(body)))),
  );
  app.addContentTypeParser('application/scim+json', { parseAs: 'string' }, (_r, body, done) => {
    try {
      done(null, JSON.parse(String(body)));
    } catch (error) {
      done(error as Error);
    }
  });

  app.post('/oauth2/token', async (request, reply) => {
    const form = request.body as Record<string, string>;
    const client = basicCredentials(request.headers.authorization) ?? {
      id: form.client_id,
      secret: form.client_secret,
    };
    if (client.id !== CLIENT_ID || client.secret !== CLIENT_SECRET) {
      return reply.code(401).send({ error: 'invalid_client' });
    }
    tokenForms.push(form);
    if (
      form.grant_type === TOKEN_EXCHANGE_GRANT &&
      subjectOf(form.subject_token) === REFUSED_SUBJECT
    ) {
      return reply.code(400).send({ error: 'invalid_grant', error_description: 'user disabled' });
    }
    tokenScopes.push(form.scope ?? '');
    const token = `tok-${tokenScopes.length}`;
    issued.add(token);
    return { access_token: token, token_type: 'Bearer', expires_in: 3600 };
  });

  app.addHook('preHandler', async (request, reply) => {
    if (!request.url.startsWith('/scim2/')) return;
    const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    apiTokens.push(token ?? '');
    if (token === undefined || !issued.has(token)) {
      await reply.code(401).send(scimErrorBody(401, 'Authorization failure'));
    }
  });

  app.get('/scim2/Users', async (request, reply) => {
    const { filter = '', count } = request.query as { filter?: string; count?: string };
    const wanted = /^userName eq "(.*)"$/.exec(filter)?.[1];
    if (filter !== '' && wanted === undefined) {
      return reply.code(400).send(scimErrorBody(400, 'Invalid filter'));
    }
    const found = [...users.values()].filter((u) => wanted === undefined || u.userName === wanted);
    const limited = count === undefined ? found : found.slice(0, Number(count));
    return { totalResults: found.length, Resources: limited };
  });

  app.get('/scim2/Users/:id', async (request, reply) => {
    const user = users.get((request.params as { id: string }).id);
    return user ?? reply.code(404).send(scimErrorBody(404, 'User not found'));
  });

  app.post('/scim2/Users', async (request, reply) => {
    const body = request.body as { userName?: unknown };
    if (typeof body?.userName !== 'string') {
      return reply.code(400).send(scimErrorBody(400, 'userName is required'));
    }
    const user = { id: `u${nextId++}`, userName: body.userName };
    users.set(user.id, user);
    return reply.code(201).header('content-type', 'application/scim+json').send(user);
  });

  app.delete('/scim2/Users/:id', async (request, reply) => {
    const deleted = users.delete((request.params as { id: string }).id);
    return deleted
      ? reply.code(204).send()
      : reply.code(404).send(scimErrorBody(404, 'User not found'));
  });

  const server = await startTestServer(app);
  return Object.assign(server, { tokenScopes, tokenForms, apiTokens });
}

/** Client credentials sent with HTTP Basic, each part form-encoded (RFC 6749 §2.3.1). */
function basicCredentials(header: string | undefined): { id: string; secret: string } | undefined {
  const encoded = /^Basic (.+)$/i.exec(header ?? '')?.[1];
  if (encoded === undefined) return undefined;
  const [id = '', secret = ''] = Buffer.from(encoded, 'base64').toString('utf8').split(':');
  return { id: decodeURIComponent(id), secret: decodeURIComponent(secret) };
}

const FIXTURES = new URL('../fixtures/', import.meta.url);

/**
 * Copies the fixture files into `dir` with the token URL pointing at `apiUrl` (the API
 * address itself is given with --source-server, as an operator would) and returns the path
 * of each Arazzo file.
 */
export function writeFixtures(dir: string, apiUrl: string) {
  const copy = (name: string) => {
    const text = readFileSync(new URL(name, FIXTURES), 'utf8').replace(
      '__TOKEN_URL__',
      `${apiUrl}/oauth2/token`,
    );
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  };
  copy('scim.openapi.yaml');
  return {
    users: copy('users.arazzo.yaml'),
    collision: copy('collision.arazzo.yaml'),
    broken: copy('broken.arazzo.yaml'),
  };
}

/** `startArazzoMcpHttp` options serving the fixture users tools against `api` on a free port. */
export function fixtureServeOptions(users: string, api: { url: string }) {
  return {
    arazzo: users,
    sourceServers: { scim: `${api.url}/scim2` },
    env: FIXTURE_ENV,
    port: 0,
    handleSignals: false,
  };
}
