import { gatewayError, type Logger } from '@mcp-identity/common';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  DefinitionTooLargeError,
  type McpProxyDefinition,
  parseDefinitionBody,
  usesDeprecatedSpecVersion,
  type ValidationContext,
  validateDefinition,
} from '../definition.js';
import type { ProxyTarget } from '../proxy-sync.js';
import type { SecretAccess } from '../secret-ref.js';
import {
  ProxyConflictError,
  type ProxyStore,
  type StoredProxy,
  StoreUnavailableError,
} from '../store.js';
import { registerDecisionsRoute } from './decisions.js';
import type { BasicAuthenticator } from './users.js';

const BASE = '/api/management/v1/mcp-proxies';

export interface ManagementOptions {
  store: ProxyStore;
  /** Routes a stored change at once (other instances follow through the store). */
  registry: ProxyTarget;
  authenticator: BasicAuthenticator;
  /** Prometheus text (a `--workers` primary gathers it from its workers). */
  metrics: { render(): string | Promise<string> };
  /** Names of the configured key managers, checked against mcp-auth `issuers`. */
  keyManagers: string[];
  /** What a definition's `secretRef` may read. */
  secrets: SecretAccess;
  logger: Logger;
  now: () => number;
}

function stateOf(definition: McpProxyDefinition): 'deployed' | 'undeployed' {
  return definition.spec.deploymentState ?? 'deployed';
}

/** The WSO2 response shape: the definition plus `status`. */
function present(proxy: StoredProxy) {
  return {
    ...proxy.definition,
    status: {
      id: proxy.id,
      state: stateOf(proxy.definition),
      createdAt: proxy.createdAt,
      updatedAt: proxy.updatedAt,
      deployedAt: proxy.deployedAt,
    },
  };
}

function notFound(reply: FastifyReply, id: string) {
  return gatewayError(reply, 404, `MCP proxy configuration with handle '${id}' not found`);
}

/** The other proxy a definition would collide with: same name, displayName+version or context. */
function conflictOf(
  proxies: StoredProxy[],
  definition: McpProxyDefinition,
  selfId?: string,
): string | undefined {
  for (const other of proxies) {
    if (other.id === selfId) continue;
    const { spec } = other.definition;
    if (other.id === definition.metadata.name) {
      return `MCP proxy configuration with handle '${other.id}' already exists`;
    }
    if (
      spec.displayName === definition.spec.displayName &&
      spec.version === definition.spec.version
    ) {
      return `MCP proxy '${spec.displayName}' version '${spec.version}' already exists`;
    }
    if (spec.context === definition.spec.context) {
      return `an MCP proxy with context '${spec.context}' already exists`;
    }
  }
  return undefined;
}

type Parsed = { ok: true; definition: McpProxyDefinition } | { ok: false };

function readDefinition(
  request: FastifyRequest,
  reply: FastifyReply,
  context: ValidationContext,
): Parsed {
  let raw: unknown;
  try {
    raw = parseDefinitionBody(String(request.body ?? ''), request.headers['content-type']);
  } catch (error) {
    gatewayError(
      reply,
      400,
      error instanceof DefinitionTooLargeError
        ? error.message
        : `request body is not valid YAML or JSON: ${(error as Error).message.split('\n')[0]}`,
    );
    return { ok: false };
  }
  const result = validateDefinition(raw, context);
  if (!result.ok) {
    const list = result.errors.map((e, i) => `${i + 1}. ${e.field}: ${e.message}`).join('; ');
    reply.code(400).send({
      status: 'error',
      message: `configuration validation failed with ${result.errors.length} error(s): ${list}`,
      errors: result.errors,
    });
    return { ok: false };
  }
  return { ok: true, definition: result.definition };
}

/** `/api/management/v1/mcp-proxies` (HTTP Basic, admin role) and `/metrics`. */
export function registerManagementApi(app: FastifyInstance, options: ManagementOptions): void {
  const { store, registry, authenticator, logger } = options;
  const timestamp = () => new Date(options.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');

  app.get('/metrics', async (_request, reply) =>
    reply
      .header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
      .send(await options.metrics.render()),
  );

  app.register(async (api) => {
    api.removeAllContentTypeParsers();
    api.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) =>
      done(null, body),
    );
    api.setErrorHandler(async (error, _request, reply) => {
      if (error instanceof StoreUnavailableError) {
        return gatewayError(reply.header('retry-after', '5'), 503, error.message);
      }
      if (error instanceof ProxyConflictError) return gatewayError(reply, 409, error.message);
      throw error;
    });
    api.addHook('onRequest', async (request, reply) => {
      const outcome = await authenticator.authenticate(request.headers.authorization, request.ip);
      if (!outcome.ok && outcome.retryAfterSeconds !== undefined) {
        return gatewayError(
          reply.header('retry-after', String(outcome.retryAfterSeconds)),
          429,
          'too many failed logins; retry later',
        );
      }
      if (!outcome.ok) {
        return gatewayError(
          reply.header('www-authenticate', 'Basic realm="gateway-management"'),
          401,
          'unauthorized',
        );
      }
      const { user } = outcome;
      if (!user.roles.includes('admin'))
        return gatewayError(reply, 403, 'the admin role is required');
      request.log.debug({ user: user.username }, 'management user authenticated');
    });

    // What a deployed or replaced definition is checked against, the same for POST and PUT.
    const deployChecks = {
      keyManagers: options.keyManagers,
      secrets: options.secrets,
      resolveSecrets: true,
    };

    api.post(BASE, async (request, reply) => {
      const parsed = readDefinition(request, reply, deployChecks);
      if (!parsed.ok) return reply;
      const { definition } = parsed;
      const conflict = conflictOf(await store.list(), definition);
      if (conflict) return gatewayError(reply, 409, conflict);
      const at = timestamp();
      const proxy: StoredProxy = {
        id: definition.metadata.name,
        definition,
        createdAt: at,
        updatedAt: at,
        deployedAt: stateOf(definition) === 'deployed' ? at : null,
      };
      await store.insert(proxy);
      registry.apply(proxy.id, definition);
      if (usesDeprecatedSpecVersion(definition)) {
        logger.warn({ proxy: proxy.id }, 'spec.specVersion is deprecated; use spec.specVersions');
      }
      logger.info({ proxy: proxy.id, context: definition.spec.context }, 'MCP proxy deployed');
      return reply.code(201).send(present(proxy));
    });

    api.get(BASE, async (request) => {
      const query = request.query as Record<string, string | undefined>;
      const proxies = (await store.list()).filter((p) => {
        const { spec } = p.definition;
        if (query.displayName !== undefined && spec.displayName !== query.displayName) return false;
        if (query.version !== undefined && spec.version !== query.version) return false;
        if (query.context !== undefined && spec.context !== query.context) return false;
        if (query.status !== undefined && stateOf(p.definition) !== query.status) return false;
        return true;
      });
      return { status: 'success', count: proxies.length, mcpProxies: proxies.map(present) };
    });

    api.get(`${BASE}/:id`, async (request, reply) => {
      const { id } = request.params as { id: string };
      const proxy = await store.get(id);
      return proxy ? present(proxy) : notFound(reply, id);
    });

    api.put(`${BASE}/:id`, async (request, reply) => {
      const { id } = request.params as { id: string };
      const existing = await store.get(id);
      if (!existing) return notFound(reply, id);
      const parsed = readDefinition(request, reply, deployChecks);
      if (!parsed.ok) return reply;
      const { definition } = parsed;
      if (definition.metadata.name !== id) {
        return gatewayError(
          reply,
          400,
          `metadata.name '${definition.metadata.name}' does not match the handle '${id}'`,
        );
      }
      const conflict = conflictOf(await store.list(), definition, id);
      if (conflict) return gatewayError(reply, 409, conflict);
      const at = timestamp();
      const deployed = stateOf(definition) === 'deployed';
      const proxy: StoredProxy = {
        ...existing,
        definition,
        updatedAt: at,
        deployedAt: deployed ? at : null,
      };
      await store.update(proxy);
      registry.apply(id, definition);
      logger.info({ proxy: id, state: stateOf(definition) }, 'MCP proxy updated');
      return present(proxy);
    });

    registerDecisionsRoute(api, BASE, store, options.now);

    api.delete(`${BASE}/:id`, async (request, reply) => {
      const { id } = request.params as { id: string };
      if (!(await store.delete(id))) return notFound(reply, id);
      registry.remove(id);
      logger.info({ proxy: id }, 'MCP proxy deleted');
      return { status: 'success', message: 'MCP proxy configuration deleted successfully', id };
    });
  });
}
