import { createApp, type Logger } from '@mcp-identity/common';
import type { FastifyInstance } from 'fastify';
import type { GatewayConfig } from '../config.js';
import { MAX_DEFINITION_BYTES } from './definition.js';
import { registerManagementApi } from './management/api.js';
import { adminFileUsers, BasicAuthenticator, resolveManagementUsers } from './management/users.js';
import { ProxyMirror, ProxySync, type ProxyTarget } from './proxy-sync.js';
import { type ManagementUserStore, type ProxyStore, SqliteProxyStore } from './store.js';
import { PostgresStore } from './store-postgres.js';

export interface GatewayStore {
  proxies: ProxyStore;
  users: ManagementUserStore;
}

/** PostgreSQL when `database.url` is set (shared by every instance), else SQLite in the data directory. */
async function openGatewayStore(config: GatewayConfig, logger: Logger): Promise<GatewayStore> {
  if (config.database.url) {
    const store = await PostgresStore.open(config.database.url, logger);
    return { proxies: store, users: store.users };
  }
  return { proxies: new SqliteProxyStore(config.dataDir), users: adminFileUsers(config.dataDir) };
}

export interface ControlPlaneOptions {
  config: GatewayConfig;
  logger: Logger;
  now: () => number;
  /** What routes the proxies: this process's registry, or the workers of a primary. */
  target: ProxyTarget;
  metrics: { render(): string | Promise<string> };
  onGeneratedAdmin: (username: string, password: string) => void;
}

export interface ControlPlane {
  /** The management API and `/metrics`, not yet listening. */
  app: FastifyInstance;
  /** Routes the stored proxies, then follows changes made through any instance. */
  start(): Promise<void>;
  close(): Promise<void>;
}

/** The store, the management users and API, and the sync that keeps the routing table current. */
export async function createControlPlane(options: ControlPlaneOptions): Promise<ControlPlane> {
  const { config, logger, now } = options;
  const store = await openGatewayStore(config, logger);
  try {
    const users = await resolveManagementUsers(
      config.managementUsers,
      store.users,
      options.onGeneratedAdmin,
    );
    const mirror = new ProxyMirror(options.target, logger);
    const sync = new ProxySync(store.proxies, mirror, logger, config.database.reconcileIntervalMs);
    const app = createApp({ logger, bodyLimit: MAX_DEFINITION_BYTES });
    registerManagementApi(app, {
      store: store.proxies,
      registry: mirror,
      authenticator: new BasicAuthenticator(users, now),
      metrics: options.metrics,
      keyManagers: config.keyManagers.map((km) => km.name),
      secrets: config.secrets,
      logger,
      now,
    });
    return {
      app,
      start: () => sync.start(),
      async close() {
        await sync.stop();
        await store.proxies.close();
      },
    };
  } catch (error) {
    await store.proxies.close();
    throw error;
  }
}
