import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AccountError, AccountStore } from '@mcp-identity/arazzo-mcp';
import {
  ensureCertificateAuthority,
  ensureSelfSignedCertificate,
  StartupError,
} from '@mcp-identity/common';
import { stringify as stringifyYaml } from 'yaml';
import type { HealthPolicy } from '../health-monitor.js';
import type { Progress } from '../progress.js';
import {
  type RestartPolicy,
  type RunningService,
  type ServiceSpec,
  type ServiceStatus,
  Supervisor,
} from '../supervisor.js';
import { delegatedMcpArgs, delegationBootstrap } from './delegation.js';
import { deployScimProxy, writeGatewayConfig } from './gateway-setup.js';
import { type StackLayout, type StackPorts, stackLayout } from './layout.js';
import { PARENT_WATCH_FILE, SCIM_ARAZZO_FILE, serviceBin } from './locations.js';
import { refuseHeldPorts } from './port-check.js';
import { gatewayApiResources, stackBootstrap } from './sample-data.js';
import { loadOrCreateStackSecrets, type StackSecrets } from './secrets.js';
import { readRunningStack, removeStackState, writeStackState } from './state.js';
import { ensureUpstreamSecret, readSecretFile, requireHeaderArgs } from './upstream-auth.js';

export interface StackOptions {
  dataDir: string;
  ports: StackPorts;
  progress: Progress;
  /** Per-service start-up limit. */
  startTimeoutMs?: number;
  /** Recorded in the state file: started by `up --detach`. */
  detached?: boolean;
  restart?: Partial<RestartPolicy>;
  /** How running services are checked, and after how long failing one is restarted. */
  health?: Partial<HealthPolicy>;
  /**
   * Development only: the IdP and Area A also fetch Client ID Metadata Documents from loopback
   * and private addresses (a client's document served on this machine; SECURITY.md, "Client ID
   * Metadata Documents"). Off by default. Either server trusts the stack's CA for them.
   */
  clientMetadataAllowPrivateAddresses?: boolean;
  /**
   * `up --delegation` (issue 41): SCIM calls act for the signed-in user through token exchange
   * (stack/delegation.ts). Off by default.
   */
  delegation?: boolean;
}

export interface RunningStack {
  layout: StackLayout;
  secrets: StackSecrets;
  /** True when this start created the stack's credentials (a fresh data directory). */
  firstStart: boolean;
  /** Started with `delegation`. */
  delegation: boolean;
  services: Record<'idp' | 'mcp' | 'gateway' | 'areaA', RunningService>;
  /** Resolves when the supervisor gave a service up (it kept failing to start again). */
  failed: Promise<ServiceStatus>;
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
  const running = readRunningStack(layout.dataDir);
  if (running) {
    throw new StartupError(
      `A stack is already running from ${layout.dataDir} (supervisor pid ${running.supervisorPid}): "mcp-identity status" shows it, "mcp-identity down" stops it.`,
    );
  }
  await refuseHeldPorts(layout.ports, layout.dataDir);
  await mkdir(layout.dataDir, { recursive: true, mode: 0o700 });
  const { created, ...secrets } = loadOrCreateStackSecrets(layout.dataDir);
  const { progress } = options;
  const supervisor = new Supervisor({
    restart: options.restart,
    health: options.health,
    log: (line) => progress.info(`[${new Date().toISOString()}] ${line}`),
  });
  const recordState = () =>
    writeStackState(layout.dataDir, {
      supervisorPid: process.pid,
      detached: options.detached ?? false,
      startedAt,
      ports: layout.ports,
      health: supervisor.health,
      services: supervisor.statuses(),
    });
  const startedAt = new Date().toISOString();
  recordState();
  supervisor.on('change', recordState);
  const failed = new Promise<ServiceStatus>((resolve) => supervisor.once('gave-up', resolve));
  const service = (spec: Omit<ServiceSpec, 'logFile' | 'command' | 'startTimeoutMs'>) =>
    supervisor.start({
      ...spec,
      command: process.execPath,
      args: ['--import', PARENT_WATCH_FILE, ...spec.args],
      logFile: join(layout.logDir, `${spec.name}.log`),
      startTimeoutMs: options.startTimeoutMs,
    });
  const stop = async () => {
    supervisor.off('change', recordState);
    await supervisor.stopAll();
    removeStackState(layout.dataDir);
  };

  try {
    // Certificates are issued here, before the services start, by the stack's
    // one CA, so every client trusts exactly that CA instead of switching
    // verification off.
    const ca = await ensureCertificateAuthority(layout.dataDir);
    await ensureSelfSignedCertificate(layout.idp.dataDir, { caDir: layout.dataDir });
    await ensureSelfSignedCertificate(layout.gateway.dataDir, { caDir: layout.dataDir });
    const trustCa = { NODE_EXTRA_CA_CERTS: layout.caFile };
    const delegation = options.delegation ?? false;
    const stackDocument = stackBootstrap(secrets, gatewayApiResources(layout));
    const bootstrap = delegation
      ? delegationBootstrap(
          stackDocument,
          secrets,
          readSecretFile(ensureUpstreamSecret(layout.mcp.exchangeSecretFile)),
          layout,
        )
      : stackDocument;
    await writeFile(layout.idp.bootstrapFile, stringifyYaml(bootstrap), { mode: 0o600 });
    const upstreamAuthArgs = requireHeaderArgs(ensureUpstreamSecret(layout.mcp.upstreamSecretFile));
    const documentArgs = options.clientMetadataAllowPrivateAddresses
      ? ['--client-metadata-allow-private-addresses']
      : [];

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
            ...documentArgs,
          ],
          // The stack's CA, for client metadata documents its certificates serve.
          env: trustCa,
          healthUrl: layout.idp.healthUrl,
          ca: ca.cert,
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
            ...upstreamAuthArgs,
            ...(delegation ? delegatedMcpArgs(layout) : []),
          ],
          env: { ...backendCredentials, ...trustCa },
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
            // The IdP and the SCIM MCP server are single processes on the same machine: a
            // second gateway worker only contends with them for the cores (bench:e2e).
            '--workers',
            '1',
          ],
          // Its token exchanges go to the IdP, whose certificate the stack's CA issued.
          ...(delegation && { env: trustCa }),
          healthUrl: layout.gateway.healthUrl,
        }),
      () => `gateway ready at ${layout.gateway.publicUrl}`,
    );
    const deployed = await progress.step(
      'deploying the /scim proxy through the management API',
      () => deployScimProxy(layout, secrets, { delegation }),
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
            ...documentArgs,
          ],
          env: { ...backendCredentials, ...trustCa },
          healthUrl: layout.areaA.healthUrl,
        }),
      () => `Area A server ready at ${layout.areaA.url}`,
    );

    return {
      layout,
      secrets,
      firstStart: created,
      delegation,
      services: { idp, mcp, gateway, areaA },
      failed,
      stop,
    };
  } catch (error) {
    await stop();
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
