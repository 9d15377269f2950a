import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AccountError, AccountStore } from '@mcp-identity/arazzo-mcp';
import { ensureSelfSignedCertificate } from '@mcp-identity/common';
import { stringify as stringifyYaml } from 'yaml';
import type { Progress } from '../progress.js';
import { type RunningService, type ServiceSpec, Supervisor } from '../supervisor.js';
import { deployScimProxy, writeGatewayConfig } from './gateway-setup.js';
import { type StackLayout, type StackPorts, stackLayout } from './layout.js';
import { SCIM_ARAZZO_FILE, serviceBin } from './locations.js';
import { stackBootstrap } from './sample-data.js';
import { loadOrCreateStackSecrets, type StackSecrets } from './secrets.js';

export interface StackOptions {
  dataDir: string;
  ports: StackPorts;
  progress: Progress;
  /** Per-service start-up limit. */
  startTimeoutMs?: number;
}

export interface RunningStack {
  layout: StackLayout;
  secrets: StackSecrets;
  /** True when this start created the stack's credentials (a fresh data directory). */
  firstStart: boolean;
  services: Record<'idp' | 'mcp' | 'gateway' | 'areaA', RunningService>;
  stop(): Promise<void>;
}

/**
 * Starts the identity provider, the SCIM MCP server, the gateway and the Area A
 * server, each as its own process, and bootstraps them. Every step is
 * idempotent: a later start on the same data directory reuses its ids, keys and
 * secrets. If a step fails, what was started is stopped again.
 */
export async function startStack(options: StackOptions): Promise<RunningStack> {
  const layout = stackLayout(options.dataDir, options.ports);
  await mkdir(layout.dataDir, { recursive: true, mode: 0o700 });
  const { created, ...secrets } = loadOrCreateStackSecrets(layout.dataDir);
  const supervisor = new Supervisor();
  const { progress } = options;
  const service = (spec: Omit<ServiceSpec, 'logFile' | 'command' | 'startTimeoutMs'>) =>
    supervisor.start({
      ...spec,
      command: process.execPath,
      logFile: join(layout.logDir, `${spec.name}.log`),
      startTimeoutMs: options.startTimeoutMs,
    });

  try {
    // The IdP's certificate is made here, before the IdP starts, so every client
    // of the IdP can trust exactly it instead of switching verification off.
    const idpTls = await ensureSelfSignedCertificate(layout.idp.dataDir);
    const trustIdp = { NODE_EXTRA_CA_CERTS: idpTls.certPath };
    await writeFile(layout.idp.bootstrapFile, stringifyYaml(stackBootstrap(secrets)), {
      mode: 0o600,
    });

    const idp = await progress.step(
      'identity provider',
      () =>
        service({
          name: 'idp',
          args: [
            serviceBin('@mcp-identity/idp'),
            'serve',
            '--port',
            String(layout.ports.idp),
            '--data-dir',
            layout.idp.dataDir,
            '--bootstrap',
            layout.idp.bootstrapFile,
            '--public-url',
            layout.idp.url,
          ],
          healthUrl: layout.idp.healthUrl,
          ca: idpTls.cert,
        }),
      () => `identity provider ready at ${layout.idp.url}`,
    );

    const backendCredentials = {
      SCIM_OAUTH2_CLIENT_ID: secrets.backendApp.clientId,
      SCIM_OAUTH2_CLIENT_SECRET: secrets.backendApp.clientSecret,
      AI_OAUTH2_CLIENT_ID: secrets.backendApp.clientId,
      AI_OAUTH2_CLIENT_SECRET: secrets.backendApp.clientSecret,
    };
    const scimSources = [
      '--source-server',
      `scim2=${layout.idp.url}/scim2`,
      '--source-server',
      `agents=${layout.idp.url}/scim2`,
    ];
    const mcp = await progress.step(
      'SCIM MCP server',
      () =>
        service({
          name: 'scim-mcp',
          args: [
            serviceBin('@mcp-identity/arazzo-mcp'),
            'serve',
            '--arazzo',
            SCIM_ARAZZO_FILE,
            ...scimSources,
            '--host',
            '127.0.0.1',
            '--port',
            String(layout.ports.mcp),
          ],
          env: { ...backendCredentials, ...trustIdp },
          healthUrl: layout.mcp.healthUrl,
        }),
      () => `SCIM MCP server ready at ${layout.mcp.mcpUrl} (21 tools)`,
    );

    await writeGatewayConfig(layout, secrets);
    const gateway = await progress.step(
      'gateway',
      () =>
        service({
          name: 'gateway',
          args: [
            serviceBin('@mcp-identity/gateway'),
            'serve',
            '--config',
            layout.gateway.configFile,
          ],
          healthUrl: layout.gateway.healthUrl,
        }),
      () => `gateway ready at ${layout.gateway.publicUrl}`,
    );
    const deployed = await progress.step(
      'deploying the /scim proxy through the management API',
      () => deployScimProxy(layout, secrets),
    );
    progress.info(`    proxy ${deployed}`);

    await progress.step('Area A account', () =>
      ensureAreaAccount(layout.areaA.dataDir, secrets.areaAccount),
    );
    const areaA = await progress.step(
      'Area A server',
      () =>
        service({
          name: 'area-a',
          args: [
            serviceBin('@mcp-identity/arazzo-mcp'),
            'serve',
            '--auth',
            'builtin',
            '--arazzo',
            SCIM_ARAZZO_FILE,
            ...scimSources,
            '--port',
            String(layout.ports.areaA),
            '--data-dir',
            layout.areaA.dataDir,
            '--public-url',
            layout.areaA.url,
          ],
          env: { ...backendCredentials, ...trustIdp },
          healthUrl: layout.areaA.healthUrl,
        }),
      () => `Area A server ready at ${layout.areaA.url}`,
    );

    return {
      layout,
      secrets,
      firstStart: created,
      services: { idp, mcp, gateway, areaA },
      stop: () => supervisor.stopAll(),
    };
  } catch (error) {
    await supervisor.stopAll();
    throw error;
  }
}

/**
 * Makes sure Area A has the stack's account with the stack's password: set the
 * password if the account exists, otherwise add it.
 */
async function ensureAreaAccount(
  dataDir: string,
  account: { email: string; password: string },
): Promise<void> {
  const store = AccountStore.open(dataDir);
  try {
    await store.setPassword(account.email, account.password);
  } catch (error) {
    if (!(error instanceof AccountError && error.code === 'not_found')) throw error;
    await store.add(account.email, account.password);
  } finally {
    store.close();
  }
}
