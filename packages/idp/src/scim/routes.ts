import { bearerChallenge, bearerToken, type JsonObject } from '@mcp-identity/common';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AccessTokenClaims, TokenService } from '../auth/tokens.js';
import { processBulk } from './bulk.js';
import {
  resourceType,
  resourceTypes,
  schema,
  schemas,
  serviceProviderConfig,
} from './discovery.js';
import {
  invalidSyntax,
  notFound,
  SCIM_CONTENT_TYPE,
  ScimError,
  VALVE_CONTENT_TYPE,
  valveErrorBody,
} from './errors.js';
import { tagMatches } from './etag.js';
import { assertSelfServicePatch, selfServiceReplacement } from './me.js';
import { readPatchOperations } from './patch.js';
import { projectBody, readProjection } from './projection.js';
import type { Locations, RoleApi } from './render.js';
import { type AccessDecision, type AccessRule, decideAccess, findAccessRule } from './scopes.js';
import { type Access, type ListQuery, type ScimResponse, ScimService } from './service.js';
import { CORE_USER_ATTRIBUTES } from './user-schema.js';
import type { UserKind } from './users.js';
import { describeScimWrite, isScimWrite, logScimWrite, type ScimWrite } from './write-log.js';

export type ScimRouteOptions = {
  service: ScimService;
  tokens: TokenService;
  locations: Locations;
  /** What the token's subject holds now (a user's role permissions, an application's scopes). */
  heldScopes: (claims: AccessTokenClaims) => ReadonlySet<string>;
  /** Called for every write once answered (the IdP counts them in /metrics). */
  onWrite?: (write: ScimWrite) => void;
};

type RequestAccess = Access & { claims?: AccessTokenClaims };

/** A collection with and without a trailing slash (`/Users/`, which some clients send). */
const collectionPaths = (prefix: string) => [prefix, `${prefix}/`];

// WSO2 (AbstractResource.isValidInputFormat) accepts these, with or without parameters.
const ACCEPTED_INPUT = new Set([
  'application/json',
  'application/scim+json',
  'application/*',
  '*/*',
]);

/** Registers /scim2 (as a prefix plugin): the access valve, the resources and discovery. */
export async function scimRoutes(app: FastifyInstance, options: ScimRouteOptions): Promise<void> {
  const { service, tokens, locations, heldScopes, onWrite } = options;
  const access = new WeakMap<FastifyRequest, RequestAccess>();
  app.addHook('onClose', async () => service.users.close());

  app.addHook('onRequest', async (request, reply) => {
    // Decided on the route the router matched (the one that will serve the request), never on
    // the raw URL. A matched route without a rule is refused; a request that matched no route
    // gets the SCIM 404, and only with a valid token.
    const rule = request.is404
      ? NOT_FOUND_RULE
      : findAccessRule(request.method, request.routeOptions.url ?? '');
    if (!rule) return valveError(reply, 403);
    if (!rule.secured) return;
    const admitted = await admitBearer(tokens, rule, request, reply);
    if (!admitted) return reply;
    const { claims, decision } = admitted;
    // Read from the database only by the writes that grant something.
    let held: ReadonlySet<string> | undefined;
    access.set(request, {
      granted: decision.granted,
      scopes: decision.scopes,
      get held() {
        held ??= heldScopes(claims);
        return held;
      },
      claims,
    });
  });

  // Every write, refused ones too, is recorded with who made it.
  app.addHook('onResponse', async (request, reply) => {
    if (!isScimWrite(request) || request.is404) return;
    const write = describeScimWrite(request, reply, access.get(request)?.claims);
    logScimWrite(request, write);
    onWrite?.(write);
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const scimError = toScimError(error);
    if (scimError.status >= 500 && !(error instanceof ScimError)) {
      request.log.error({ err: error }, 'SCIM request failed');
    }
    return sendScim(reply, { status: scimError.status, body: scimError.toBody() });
  });
  app.setNotFoundHandler((_request, reply) =>
    sendScim(reply, {
      status: 404,
      body: notFound('Specified resource (e.g., User) or endpoint does not exist.').toBody(),
    }),
  );

  const accessOf = (request: FastifyRequest): RequestAccess =>
    access.get(request) ?? { granted: false, scopes: new Set(), held: new Set() };
  const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;
  const ifMatchOf = (request: FastifyRequest) => headerOf(request, 'if-match');
  const listQuery = (request: FastifyRequest): ListQuery => {
    const q = request.query as Record<string, unknown>;
    return {
      filter: q.filter,
      startIndex: q.startIndex,
      count: q.count,
      sortBy: q.sortBy,
      sortOrder: q.sortOder ?? q.sortOrder,
      attributes: q.attributes,
      excludedAttributes: q.excludedAttributes,
    };
  };
  /** A read's response with the request's `attributes`/`excludedAttributes` applied. */
  const projected = (query: ListQuery, response: ScimResponse): ScimResponse => {
    const body = projectBody(
      response.body,
      readProjection(query.attributes, query.excludedAttributes),
    );
    return body === undefined ? response : { ...response, body };
  };
  const list = async (
    query: ListQuery,
    run: (query: ListQuery) => ScimResponse | Promise<ScimResponse>,
  ) => projected(query, await run(query));

  const userRoutes = (prefix: string, kind: UserKind) => {
    const search = (query: ListQuery) => service.listUsers(kind, query);
    for (const path of collectionPaths(prefix)) {
      app.get(path, async (request, reply) =>
        sendScim(reply, await list(listQuery(request), search)),
      );
      app.post(path, async (request, reply) =>
        sendScim(reply, await service.createUser(kind, readJson(request))),
      );
    }
    app.post(`${prefix}/.search`, async (request, reply) =>
      sendScim(reply, await list(ScimService.readSearchRequest(readJson(request)), search)),
    );
    app.get(`${prefix}/:id`, async (request, reply) =>
      sendScim(
        reply,
        unlessNotModified(
          request,
          projected(listQuery(request), service.getUser(kind, idOf(request))),
        ),
      ),
    );
    app.put(`${prefix}/:id`, async (request, reply) =>
      sendScim(
        reply,
        await service.replaceUser(kind, idOf(request), readJson(request), ifMatchOf(request)),
      ),
    );
    app.patch(`${prefix}/:id`, async (request, reply) =>
      sendScim(
        reply,
        await service.patchUser(kind, idOf(request), readJson(request), ifMatchOf(request)),
      ),
    );
    app.delete(`${prefix}/:id`, async (request, reply) =>
      sendScim(reply, service.deleteUser(kind, idOf(request), ifMatchOf(request))),
    );
  };
  // Root search over Users and Groups; needs both list scopes (scopes.ts).
  app.post('/.search', async (request, reply) =>
    sendScim(
      reply,
      await list(ScimService.readSearchRequest(readJson(request)), (q) => service.searchAll(q)),
    ),
  );
  userRoutes('/Users', 'user');
  userRoutes('/Agents', 'agent');

  const searchGroups = (query: ListQuery) => service.listGroups(query);
  for (const path of collectionPaths('/Groups')) {
    app.get(path, async (request, reply) =>
      sendScim(reply, await list(listQuery(request), searchGroups)),
    );
    app.post(path, async (request, reply) =>
      sendScim(reply, service.createGroup(readJson(request))),
    );
  }
  app.post('/Groups/.search', async (request, reply) =>
    sendScim(reply, await list(ScimService.readSearchRequest(readJson(request)), searchGroups)),
  );
  app.get('/Groups/:id', async (request, reply) =>
    sendScim(
      reply,
      unlessNotModified(request, projected(listQuery(request), service.getGroup(idOf(request)))),
    ),
  );
  app.put('/Groups/:id', async (request, reply) =>
    sendScim(
      reply,
      service.replaceGroup(idOf(request), readJson(request), accessOf(request), ifMatchOf(request)),
    ),
  );
  app.patch('/Groups/:id', async (request, reply) =>
    sendScim(
      reply,
      service.patchGroup(idOf(request), readJson(request), accessOf(request), ifMatchOf(request)),
    ),
  );
  app.delete('/Groups/:id', async (request, reply) =>
    sendScim(reply, service.deleteGroup(idOf(request), ifMatchOf(request))),
  );

  const roleRoutes = (prefix: string, api: RoleApi) => {
    const search = (query: ListQuery) => service.listRoles(query, api);
    app.get(prefix, async (request, reply) =>
      sendScim(reply, await list(listQuery(request), search)),
    );
    app.post(`${prefix}/.search`, async (request, reply) =>
      sendScim(reply, await list(ScimService.readSearchRequest(readJson(request)), search)),
    );
    app.post(prefix, async (request, reply) =>
      sendScim(reply, service.createRole(readJson(request), accessOf(request), api)),
    );
    app.get(`${prefix}/:id`, async (request, reply) =>
      sendScim(reply, projected(listQuery(request), service.getRole(idOf(request), api))),
    );
    app.put(`${prefix}/:id`, async (request, reply) =>
      sendScim(
        reply,
        service.replaceRole(idOf(request), readJson(request), accessOf(request), api),
      ),
    );
    app.patch(`${prefix}/:id`, async (request, reply) =>
      sendScim(reply, service.patchRole(idOf(request), readJson(request), accessOf(request), api)),
    );
    app.delete(`${prefix}/:id`, async (request, reply) =>
      sendScim(reply, service.deleteRole(idOf(request))),
    );
  };
  roleRoutes('/v2/Roles', 'v2');
  roleRoutes('/Roles', 'v1');

  app.post('/Bulk', async (request, reply) =>
    sendScim(reply, {
      status: 200,
      body: await processBulk(service, readJson(request), accessOf(request)),
    }),
  );

  // /Me acts on the user the token was issued to (authorization code tokens only).
  const meId = (request: FastifyRequest): string => {
    const subject = accessOf(request).claims?.sub ?? '';
    if (!service.users.getRow('user', subject)) throw notFound('User not found in the user store.');
    return subject;
  };
  app.get('/Me', async (request, reply) => sendScim(reply, service.getUser('user', meId(request))));
  // Administrative attributes are read-only through /Me: a PUT keeps the stored ones, a
  // PATCH touching one is refused.
  app.put('/Me', async (request, reply) => {
    const id = meId(request);
    const { id: _id, meta: _meta, ...stored } = service.users.get('user', id);
    const body = selfServiceReplacement(readJson(request), stored);
    return sendScim(reply, await service.replaceUser('user', id, body));
  });
  app.patch('/Me', async (request, reply) => {
    const id = meId(request);
    const body = readJson(request);
    assertSelfServicePatch(readPatchOperations(body));
    return sendScim(reply, await service.patchUser('user', id, body));
  });

  const discovery = (path: string, read: (request: FastifyRequest) => JsonObject | undefined) => {
    app.get(path, async (request, reply) => {
      const body = read(request);
      if (!body) {
        throw notFound('Specified resource (e.g., User) or endpoint does not exist.');
      }
      return sendScim(reply, { status: 200, body });
    });
    // Discovery is read-only (RFC 7644 §4).
    app.route({
      method: ['POST', 'PUT', 'PATCH', 'DELETE'],
      url: path,
      handler: async (_request, reply) => {
        reply.header('allow', 'GET');
        throw new ScimError(405, 'The requested method is not supported on this endpoint.');
      },
    });
  };
  const userSchema = () => service.users.schema();
  discovery('/ServiceProviderConfig', () => serviceProviderConfig(locations));
  discovery('/ResourceTypes', () => resourceTypes(locations));
  discovery('/ResourceTypes/:id', (request) => resourceType(locations, idOf(request)));
  discovery('/Schemas', () => schemas(userSchema(), CORE_USER_ATTRIBUTES));
  discovery('/Schemas/:id', (request) => schema(userSchema(), CORE_USER_ATTRIBUTES, idOf(request)));
}

/** Requests that matched no route: a valid token, then the SCIM 404. */
const NOT_FOUND_RULE: AccessRule = { route: '', methods: [], scopes: [], secured: true };

/**
 * The valve's check of a secured rule: a bearer token the IdP issued, holding the rule's scopes.
 * Undefined once it has answered 401 (no valid token) or 403 (scopes short of the rule).
 */
export async function admitBearer(
  tokens: TokenService,
  rule: AccessRule,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<
  { claims: AccessTokenClaims; decision: AccessDecision & { allowed: true } } | undefined
> {
  const token = bearerToken(request.headers.authorization);
  const claims = token ? await tokens.verify(token) : undefined;
  if (!claims) {
    // Quoted, unlike WSO2's `realm=<host>`: RFC 7235 §2.2 allows senders only the quoted form.
    reply.header('www-authenticate', bearerChallenge({ realm: request.hostname }));
    valveError(reply, 401);
    return undefined;
  }
  const decision = decideAccess(rule, new Set(claims.scope.split(' ').filter(Boolean)));
  if (!decision.allowed) {
    valveError(reply, 403);
    return undefined;
  }
  return { claims, decision };
}

/** WSO2's valve answers (plain JSON, numeric status). */
function valveError(reply: FastifyReply, status: 401 | 403): FastifyReply {
  return reply
    .code(status)
    .header('content-type', VALVE_CONTENT_TYPE)
    .send(JSON.stringify(valveErrorBody(status)));
}

function headerOf(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** A read whose version the client holds (`If-None-Match`) is a 304 without a body (RFC 7232 §4.1). */
function unlessNotModified(request: FastifyRequest, response: ScimResponse): ScimResponse {
  const ifNoneMatch = headerOf(request, 'if-none-match');
  if (ifNoneMatch === undefined || !response.etag || !tagMatches(ifNoneMatch, response.etag)) {
    return response;
  }
  return { status: 304, etag: response.etag };
}

function sendScim(reply: FastifyReply, response: ScimResponse): FastifyReply {
  if (response.etag) reply.header('etag', response.etag);
  if (response.status === 304) return reply.code(304).send();
  reply.code(response.status).header('content-type', SCIM_CONTENT_TYPE);
  if (response.location) reply.header('location', response.location);
  // A Buffer keeps Fastify from appending a charset to WSO2's exact content type.
  return response.body === undefined
    ? reply.send()
    : reply.send(Buffer.from(JSON.stringify(response.body)));
}

/** The request body as JSON, after WSO2's content-type check. */
function readJson(request: FastifyRequest): unknown {
  const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (!ACCEPTED_INPUT.has(type)) throw new ScimError(406, 'The specified format is not supported.');
  const text = typeof request.body === 'string' ? request.body : '';
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw invalidSyntax('Malformed JSON in the request body.');
  }
}

function toScimError(error: FastifyError): ScimError {
  if (error instanceof ScimError) return error;
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return new ScimError(
      413,
      'The request payload exceeds the maxPayloadSize: 1048576',
      'tooLarge',
    );
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500)
    return new ScimError(status, 'Invalid request.', 'invalidSyntax');
  return new ScimError(500, 'Internal server error.');
}
