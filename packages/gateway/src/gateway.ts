import { mkdirSync } from 'node:fs';
import path from 'node:path';
import {
  batchedStdout,
  createApp,
  createLogger,
  createOriginPolicy,
  ensureSelfSignedCertificate,
  type Logger,
  loadTlsFiles,
  onShutdown,
  type RunningServer,
  startServer,
  type ThrottleFactory,
} from '@mcp-identity/common';
import { TokenVerifier } from './auth/verifier.js';
import { type GatewayConfig, loadConfigFile, resolveConfig } from './config.js';
import { type ControlPlane, createControlPlane } from './control-plane/control-plane.js';
import { type ProxyEntry, ProxyMirror } from './control-plane/proxy-sync.js';
import { createDataPlaneFront, Listener } from './data-plane/front.js';
import { ProxyRegistry } from './data-plane/registry.js';
import { BodyBudget, ByteBudget } from './data-plane/request.js';
import { GatewayMetrics, type MetricsSnapshot } from './metrics.js';
import { installProcessGuard } from './process-guard.js';
import { openRateLimitCounters } from './ratelimit-counters.js';

export interface GatewayOptions {
  /** A resolved configuration (see `resolveConfig`); wins over `configFile` and `settings`. */
  config?: GatewayConfig;
  /** Path of a TOML configuration file. */
  configFile?: string;
  /** A configuration document shaped like the TOML file (handy for tests and embedding). */
  settings?: Record<string, unknown>;
  /** Overrides the configured data directory. */
  dataDir?: string;
  /** Overrides `database.url`: PostgreSQL shared by every gateway instance. */
  databaseUrl?: string;
  /**
   * Serve the data plane only, routing the proxies this feed delivers (a `--workers` worker,
   * whose primary owns the store and the management API). Resolves once the first list is in.
   */
  proxyFeed?: (replaceAll: (proxies: ProxyEntry[]) => void) => Promise<void>;
  /**
   * Where `mcp-ratelimit` counts when `ratelimit.redis_url` is not set (a `--workers` worker:
   * in its primary); default this process's memory.
   */
  rateLimitCounters?: ThrottleFactory;
  logger?: Logger;
  /** Clock for token and JWKS expiry (milliseconds since the epoch). */
  now?: () => number;
  /** Receives a generated admin password once; default prints it to stdout. */
  onGeneratedAdmin?: (username: string, password: string) => void;
  /** Close on SIGINT/SIGTERM (default false; `gateway serve` turns it on). */
  handleSignals?: boolean;
  /**
   * Log and count (`mcp_gateway_uncaught_errors_total`) errors that escape every handler
   * instead of letting them end the process (default false; `gateway serve` turns it on).
   */
  guardProcess?: boolean;
}

export interface RunningGateway {
  /** HTTPS listener serving proxies. */
  publicUrl: string;
  /** Plain HTTP listener serving proxies and `/_gateway-health/*`. */
  plainUrl: string;
  /** Management API and `/metrics` (empty when serving the data plane only). */
  managementUrl: string;
  /** Public address used in protected resource metadata. */
  gatewayUrl: string;
  config: GatewayConfig;
  /** This process's metrics in Prometheus text format. */
  renderMetrics(): Promise<string>;
  /** This process's metrics as prom-client JSON (what a worker sends its primary). */
  metricsSnapshot(): Promise<MetricsSnapshot>;
  close(): Promise<void>;
}

const SHUTDOWN_GRACE_MS = 2_000;

export function printAdmin(username: string, password: string): void {
  process.stdout.write(
    `\nGateway management API user created: ${username}\nPassword (shown once, stored hashed): ${password}\n\n`,
  );
}

/** The configuration `startGateway` uses for these options. */
export function gatewayConfigOf(options: GatewayOptions): GatewayConfig {
  const overrides = {
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    ...(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {}),
  };
  return (
    options.config ??
    (options.configFile
      ? loadConfigFile(options.configFile, overrides)
      : resolveConfig(options.settings ?? {}, overrides))
  );
}

/** Where the configuration came from and what it chose, for the `gateway started` log line. */
export function startupFacts(
  options: GatewayOptions,
  config: GatewayConfig,
): { configuration: string; dataDir: string; host: string } {
  const configuration = options.config
    ? 'a resolved configuration object'
    : options.configFile
      ? path.resolve(options.configFile)
      : options.settings
        ? 'settings passed to startGateway'
        : 'built-in defaults (no --config)';
  return { configuration, dataDir: config.dataDir, host: config.host };
}

/** Starts the gateway's three listeners and loads the deployed proxies from the data directory. */
export async function startGateway(options: GatewayOptions = {}): Promise<RunningGateway> {
  const config = gatewayConfigOf(options);
  const logger =
    options.logger ??
    createLogger({ name: 'gateway', level: config.logLevel, destination: batchedStdout() });
  const now = options.now ?? Date.now;
  mkdirSync(config.dataDir, { recursive: true });

  const tls = config.tls
    ? await loadTlsFiles(config.tls.certPath, config.tls.keyPath)
    : await ensureSelfSignedCertificate(config.dataDir);
  const counters = await openRateLimitCounters(config, options.rateLimitCounters, now);
  const verifier = new TokenVerifier(config.keyManagers, config.jwt, now, logger);
  verifier.start();
  const metrics = new GatewayMetrics();
  let gatewayUrl = config.gatewayUrl ?? '';
  const registry = new ProxyRegistry({
    keyManagers: config.keyManagers,
    verifier,
    upstream: {
      connections: config.limits.upstreamConnections,
      queueLength: config.limits.upstreamQueueLength,
      queueTimeoutMs: config.limits.upstreamQueueTimeoutMs,
      idleTimeoutMs: config.limits.idleTimeoutMs,
    },
    now,
    logger,
    throttles: counters.factory,
    secrets: config.secrets,
  });
  const answerBudget = new ByteBudget(config.limits.maxBufferedAnswerBytes);
  metrics.observe({
    upstreams: () => registry.runtimes(),
    bufferedAnswerBytes: () => answerBudget.usedBytes,
  });
  // `recordLineWriter` (data-plane/pipeline.ts) writes the audit lines, in this child's name.
  const audit = logger.child({ component: 'audit' });
  const httpsListener = new Listener('https');
  const httpListener = new Listener('http');
  const dataPlane = {
    registry,
    metrics,
    audit,
    logger,
    maxRequestBodyBytes: config.limits.maxRequestBodyBytes,
    bodyBudget: new BodyBudget(config.limits.maxInflightRequestBytes),
    answerBudget,
    originPolicy: createOriginPolicy({
      ownOrigins: config.gatewayUrl ? [config.gatewayUrl] : [],
      allowedOrigins: config.allowedOrigins,
    }),
  };

  // Each data-plane listener is served by its front handler, every path included; Fastify
  // behind it only answers 503 while the server shuts down.
  const publicApp = createApp({
    logger,
    https: { cert: tls.cert, key: tls.key },
    front: createDataPlaneFront({ ...dataPlane, listener: httpsListener }),
  });
  const plainApp = createApp({
    logger,
    front: createDataPlaneFront({
      ...dataPlane,
      listener: httpListener,
      // Not ready before every key manager's keys are in: every token would be refused (503).
      health: { ready: () => verifier.ready() },
    }),
  });

  const servers: RunningServer[] = [];
  let control: ControlPlane | undefined;
  const unguard = options.guardProcess ? installProcessGuard(logger, metrics) : undefined;
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= shutdown();
    return closing;
  };
  const shutdown = async () => {
    // Long-lived MCP streams would hold the listeners open: each server cuts what is left of
    // them after a short grace period.
    await Promise.all(servers.map((s) => s.close()));
    await registry.close();
    await verifier.close();
    await control?.close();
    counters.close();
    unguard?.();
  };
  try {
    if (!options.proxyFeed) {
      control = await createControlPlane({
        config,
        logger,
        now,
        target: registry,
        metrics,
        onGeneratedAdmin: options.onGeneratedAdmin ?? printAdmin,
      });
    }
    const listen = {
      handleSignals: options.handleSignals ?? false,
      closeGraceMs: SHUTDOWN_GRACE_MS,
    };
    const publicServer = await startServer(publicApp, {
      ...listen,
      host: config.host,
      port: config.ports.https,
    });
    servers.push(publicServer);
    const plainServer = await startServer(plainApp, {
      ...listen,
      host: config.host,
      port: config.ports.http,
    });
    servers.push(plainServer);
    if (control) {
      servers.push(
        await startServer(control.app, {
          ...listen,
          host: config.managementHost,
          port: config.ports.management,
        }),
      );
    }
    httpsListener.bind(publicServer.port, config.gatewayUrl);
    // Behind a load balancer the plain listener is the one it reaches: `gatewayurl` is the
    // resource there too, so every instance names the URL clients use (RFC 9728 §3.3).
    httpListener.bind(plainServer.port, config.gatewayUrl);
    if (!gatewayUrl) gatewayUrl = `https://localhost:${publicServer.port}`;
    if (control) await control.start();
    else {
      const mirror = new ProxyMirror(registry, logger);
      await options.proxyFeed?.((proxies) => mirror.replaceAll(proxies));
    }
  } catch (error) {
    await close();
    throw error;
  }
  // On SIGINT/SIGTERM the listeners close themselves; this also cuts lingering streams and
  // closes the database cleanly.
  if (options.handleSignals) onShutdown(close);
  const [publicServer, plainServer, managementServer] = servers as [
    RunningServer,
    RunningServer,
    RunningServer | undefined,
  ];
  logger.info(
    {
      public: publicServer.url,
      plain: plainServer.url,
      management: managementServer?.url,
      ...startupFacts(options, config),
    },
    options.proxyFeed ? 'gateway worker started' : 'gateway started',
  );
  return {
    publicUrl: publicServer.url,
    plainUrl: plainServer.url,
    managementUrl: managementServer?.url ?? '',
    gatewayUrl,
    config,
    renderMetrics: () => metrics.render(),
    metricsSnapshot: () => metrics.snapshot(),
    close,
  };
}
