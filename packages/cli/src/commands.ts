import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import {
  type ConfigSource,
  commandLineFlag,
  defineConfig,
  isJsonObject,
  type LoadedConfig,
  loadConfig,
  NotFoundError,
  renderConfigHelp,
} from '@mcp-identity/common';
import type { Agent } from 'undici';
import { clientConfiguration, MCP_CLIENTS, type McpClientName } from './connect.js';
import { renderDemo, runDemo } from './demo.js';
import { checkHealth } from './health-check.js';
import type { HealthPolicy } from './health-monitor.js';
import { createProgress } from './progress.js';
import {
  callToolThroughGateway,
  clientCredentialsToken,
  resultText,
  trustingAgent,
} from './stack/clients.js';
import { scopesForTool } from './stack/gateway-rules.js';
import { DEFAULT_PORTS, type StackLayout, type StackPorts, stackLayout } from './stack/layout.js';
import { CLI_BIN, serviceBin } from './stack/locations.js';
import { projectRoot } from './stack/project-root.js';
import { isStackSecrets, readStackSecrets, type StackSecrets } from './stack/secrets.js';
import { type RunningStack, startStack } from './stack/start.js';
import { isAlive, readRunningStack, type StackState } from './stack/state.js';
import { renderStatus } from './stack/status-report.js';
import { renderSummary, type StackFlags } from './stack/summary.js';

export { scopesForTool };

/** Set by `up --detach` on the supervisor it starts in the background. */
const DETACHED_ENV = 'MCP_IDENTITY_DETACHED';
const DEFAULT_DATA_DIR = '.data';

const DATA_DIR = {
  type: 'string',
  description: 'Data directory of the stack',
  env: 'MCP_IDENTITY_DATA_DIR',
  default: DEFAULT_DATA_DIR,
} as const;

const port = (name: string, fallback: number, env: string) =>
  ({
    type: 'integer',
    description: `${name} port`,
    env,
    default: fallback,
    schema: { minimum: 1, maximum: 65535 },
  }) as const;

const PORTS = {
  idpPort: port('Identity provider (HTTPS)', DEFAULT_PORTS.idp, 'MCP_IDENTITY_IDP_PORT'),
  mcpPort: port('SCIM MCP server', DEFAULT_PORTS.mcp, 'MCP_IDENTITY_MCP_PORT'),
  gatewayHttpsPort: port(
    'Gateway HTTPS',
    DEFAULT_PORTS.gatewayHttps,
    'MCP_IDENTITY_GATEWAY_HTTPS_PORT',
  ),
  gatewayHttpPort: port(
    'Gateway plain HTTP',
    DEFAULT_PORTS.gatewayHttp,
    'MCP_IDENTITY_GATEWAY_HTTP_PORT',
  ),
  managementPort: port(
    'Gateway management',
    DEFAULT_PORTS.gatewayManagement,
    'MCP_IDENTITY_MANAGEMENT_PORT',
  ),
  areaAPort: port('Area A server', DEFAULT_PORTS.areaA, 'MCP_IDENTITY_AREA_A_PORT'),
} as const;

/** The option that sets each of the stack's ports. */
const PORT_OPTIONS = {
  idp: 'idpPort',
  mcp: 'mcpPort',
  gatewayHttps: 'gatewayHttpsPort',
  gatewayHttp: 'gatewayHttpPort',
  gatewayManagement: 'managementPort',
  areaA: 'areaAPort',
} as const satisfies Record<keyof StackPorts, keyof typeof PORTS>;

/**
 * The flags of the data directory and of each port, for the commands the CLI prints and the
 * one it runs detached: the names `loadConfig` reads them by.
 */
const STACK_FLAGS: StackFlags = {
  dataDir: commandLineFlag('dataDir', DATA_DIR) as string,
  ports: Object.fromEntries(
    Object.entries(PORT_OPTIONS).map(([key, option]) => [
      key,
      commandLineFlag(option, PORTS[option]),
    ]),
  ) as StackFlags['ports'],
};

/**
 * The ports the options choose; with `running`, an option left at its default
 * takes the running stack's port instead.
 */
function portsOf(
  config: Pick<LoadedConfig<typeof PORTS>, 'values' | 'sources'>,
  running?: StackPorts,
): StackPorts {
  const chosen = Object.entries(PORT_OPTIONS).map(([key, option]) => [
    key,
    running && config.sources[option] === 'default'
      ? running[key as keyof StackPorts]
      : config.values[option],
  ]);
  return Object.fromEntries(chosen) as StackPorts;
}

/** How the supervisor checks running services (README, *The supervisor*). */
const HEALTH = {
  healthIntervalMs: {
    type: 'integer',
    description:
      'Milliseconds between two health checks of a running service (each waits as long for its answer)',
    env: 'MCP_IDENTITY_HEALTH_INTERVAL_MS',
    default: 5_000,
    schema: { minimum: 100 },
  },
  unhealthyAfterMs: {
    type: 'integer',
    description:
      'A running service whose health checks fail for this many milliseconds is killed and restarted',
    env: 'MCP_IDENTITY_UNHEALTHY_AFTER_MS',
    default: 30_000,
    schema: { minimum: 100 },
  },
} as const;

const UP = defineConfig({
  dataDir: DATA_DIR,
  ...PORTS,
  ...HEALTH,
  detach: {
    type: 'boolean',
    description: 'Start in the background; "mcp-identity down" stops it',
    default: false,
  },
  delegation: {
    type: 'boolean',
    description:
      'SCIM calls act for the signed-in user: the gateway and the SCIM MCP server exchange tokens at the IdP (RFC 8693), so the directory enforces and records the user and both actors',
    env: 'MCP_IDENTITY_DELEGATION',
    default: false,
  },
});

/** The helpers read the ports from the running stack's data directory; a port flag overrides. */
const STACK = defineConfig({ dataDir: DATA_DIR, ...PORTS });

const CLIENT = defineConfig({
  ...STACK,
  scopes: { type: 'string', description: 'Space-separated scopes for the token' },
  args: { type: 'string', description: 'Tool arguments as a JSON object', default: '{}' },
});

export const USAGE = `Usage: mcp-identity <command> [options]

Commands:
  up [--detach]           start the whole stack (IdP, SCIM MCP server, gateway, Area A) and bootstrap it
  status                  each service's state, pid, restarts and health
  down                    stop a stack started with "up --detach"
  connect <client>        print a configuration for ${MCP_CLIENTS.join(', ')}
  token --scopes "<s>"    print a client-credentials token of the client application
  call <tool> --args '<json>' [--scopes "<s>"]
                          call a tool through the gateway with the MCP SDK client
  demo                    run the gateway's scope decisions against the running stack
  idp <args>              the identity provider's own command (idp --help)
  gateway <args>          the gateway's own command
  arazzo-mcp <args>       the Arazzo MCP server's own command

Run "mcp-identity <command> --help" for a command's options, "mcp-identity --version" for the
version.`;

export interface Io {
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
}

export async function runCommand(argv: string[], io: Io): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'up':
      return up(rest, io);
    case 'token':
      return token(rest, io);
    case 'call':
      return call(rest, io);
    case 'demo':
      return demo(rest, io);
    case 'status':
      return status(rest, io);
    case 'down':
      return down(rest, io);
    case 'connect':
      return connect(rest, io);
    case 'idp':
      return delegate('@mcp-identity/idp', rest);
    case 'gateway':
      return delegate('@mcp-identity/gateway', rest);
    case 'arazzo-mcp':
      return delegate('@mcp-identity/arazzo-mcp', rest);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      io.out.write(`${USAGE}\n`);
      return command === undefined ? 2 : 0;
    default:
      io.err.write(`Unknown command "${command}".\n\n${USAGE}\n`);
      return 2;
  }
}

/**
 * The data directory: a relative one resolves against the project root (as
 * npm finds it) when it is the default, against the working directory when
 * the user named it.
 */
function dataDirOf(value: string, source: ConfigSource): string {
  return source === 'default' ? resolve(projectRoot(process.cwd()), value) : resolve(value);
}

function defaultDataDir(): string {
  return dataDirOf(DEFAULT_DATA_DIR, 'default');
}

async function up(argv: string[], io: Io): Promise<number> {
  const config = loadConfig(UP, { argv, env: process.env });
  if (config.help) {
    io.out.write(`Usage: mcp-identity up [options]\n\n${renderConfigHelp(UP)}\n`);
    return 0;
  }
  const dataDir = dataDirOf(config.values.dataDir, config.sources.dataDir);
  const ports = portsOf(config);
  const health: HealthPolicy = {
    intervalMs: config.values.healthIntervalMs,
    unhealthyAfterMs: config.values.unhealthyAfterMs,
  };
  const detached = process.env[DETACHED_ENV] === '1';
  const { delegation } = config.values;
  if (config.values.detach && !detached) {
    return launchDetached(dataDir, ports, health, delegation, io);
  }

  const progress = createProgress(io.err);
  progress.info(`Starting mcp-identity (data in ${dataDir})`);
  const stack = await startStack({ dataDir, ports, progress, detached, health, delegation });
  const summary = renderSummary(stack, {
    detached,
    defaultDataDir: defaultDataDir(),
    flags: STACK_FLAGS,
  });
  if (detached && process.send) process.send({ ready: summary });
  else io.out.write(summary);
  const reason = await stopReason(stack, { watchParent: !detached });
  progress.info(`\nStopping (${reason.why})…`);
  await stack.stop();
  progress.info('Stopped.');
  return reason.exitCode;
}

/**
 * Whatever ends a stack: SIGINT, SIGTERM or SIGHUP to the supervisor, its
 * parent dying (a supervisor in the foreground never outlives the shell or
 * npm that started it), or a service the supervisor had to give up on.
 */
async function stopReason(
  stack: RunningStack,
  options: { watchParent: boolean },
): Promise<{ why: string; exitCode: number }> {
  const cleanups: (() => void)[] = [];
  const signals = (['SIGINT', 'SIGTERM', 'SIGHUP'] as const).map(
    (signal) =>
      new Promise<{ why: string; exitCode: number }>((resolve) => {
        const handler = () => resolve({ why: signal, exitCode: 0 });
        process.once(signal, handler);
        cleanups.push(() => process.off(signal, handler));
      }),
  );
  const parentGone = new Promise<{ why: string; exitCode: number }>((resolve) => {
    if (!options.watchParent) return;
    const parent = process.ppid;
    const timer = setInterval(() => {
      if (process.ppid !== parent) resolve({ why: `parent process ${parent} exited`, exitCode: 1 });
    }, 500);
    cleanups.push(() => clearInterval(timer));
  });
  const failed = stack.failed.then((service) => ({
    why: `${service.name} kept failing to start`,
    exitCode: 1,
  }));
  try {
    return await Promise.race([...signals, parentGone, failed]);
  } finally {
    for (const cleanup of cleanups) cleanup();
  }
}

/**
 * `up --detach`: starts the supervisor as a new session (no terminal, its
 * output in `logs/supervisor.log`), prints the summary once the stack is up,
 * and returns; `down` stops it.
 */
async function launchDetached(
  dataDir: string,
  ports: StackPorts,
  health: HealthPolicy,
  delegation: boolean,
  io: Io,
): Promise<number> {
  const logFile = join(dataDir, 'logs', 'supervisor.log');
  mkdirSync(dirname(logFile), { recursive: true, mode: 0o700 });
  const log = openSync(logFile, 'a');
  const portArgs = (Object.entries(STACK_FLAGS.ports) as [keyof StackPorts, string][]).flatMap(
    ([key, flag]) => [flag, String(ports[key])],
  );
  const healthArgs = [
    commandLineFlag('healthIntervalMs', HEALTH.healthIntervalMs) as string,
    String(health.intervalMs),
    commandLineFlag('unhealthyAfterMs', HEALTH.unhealthyAfterMs) as string,
    String(health.unhealthyAfterMs),
  ];
  const child = spawn(
    process.execPath,
    [
      CLI_BIN,
      'up',
      STACK_FLAGS.dataDir,
      dataDir,
      ...portArgs,
      ...healthArgs,
      ...(delegation ? [commandLineFlag('delegation', UP.delegation) as string] : []),
    ],
    {
      detached: true,
      stdio: ['ignore', log, log, 'ipc'],
      env: { ...process.env, [DETACHED_ENV]: '1' },
    },
  );
  closeSync(log);
  const outcome = await new Promise<{ ready: string } | { exitCode: number | null }>((settle) => {
    child.once('message', (message) => settle(message as { ready: string }));
    child.once('exit', (exitCode) => settle({ exitCode }));
  });
  if ('ready' in outcome) {
    io.out.write(outcome.ready);
    child.disconnect();
    child.unref();
    return 0;
  }
  const tail = readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-20).join('\n');
  io.err.write(
    `The stack did not start (exit code ${outcome.exitCode}); ${logFile} ends:\n${tail}\n`,
  );
  return 1;
}

/** The running stack of the data directory, or an error saying how to start one. */
function runningStack(dataDir: string): StackState {
  const state = readRunningStack(dataDir);
  if (state) return state;
  const flag = dataDir === defaultDataDir() ? '' : ` --data-dir ${dataDir}`;
  throw new NotFoundError(
    `No stack is running from ${dataDir}: start one with "mcp-identity up${flag}".`,
  );
}

/**
 * Where the helper commands find the stack: its data directory (from the
 * project root) holds its credentials and the ports it runs on; a port flag
 * given explicitly wins.
 */
function helperStack(config: ReturnType<typeof loadConfig<typeof STACK>>): {
  layout: StackLayout;
  secrets: StackSecrets;
} {
  const dataDir = dataDirOf(config.values.dataDir, config.sources.dataDir);
  const layout = stackLayout(dataDir, portsOf(config, runningStack(dataDir).ports));
  const secrets = readStackSecrets(dataDir);
  if (!isStackSecrets(secrets)) {
    throw new NotFoundError(`No stack credentials in ${dataDir}: run "mcp-identity up" first.`);
  }
  return { layout, secrets };
}

async function status(argv: string[], io: Io): Promise<number> {
  const config = loadConfig(STACK, { argv, env: process.env });
  if (config.help) {
    io.out.write(`Usage: mcp-identity status [options]\n\n${renderConfigHelp(STACK)}\n`);
    return 0;
  }
  const dataDir = dataDirOf(config.values.dataDir, config.sources.dataDir);
  const state = runningStack(dataDir);
  const layout = stackLayout(dataDir, state.ports);
  const healthUrls: Record<string, string> = {
    idp: layout.idp.healthUrl,
    'scim-mcp': layout.mcp.healthUrl,
    gateway: layout.gateway.healthUrl,
    'area-a': layout.areaA.healthUrl,
  };
  const dispatcher = trustingAgent(layout.caFile);
  const rows = await Promise.all(
    state.services.map(async (service) => {
      const url = healthUrls[service.name];
      const health = url ? await probeHealth(url, dispatcher) : 'unknown';
      return { ...service, health };
    }),
  );
  await dispatcher.close();
  io.out.write(renderStatus(dataDir, state, rows));
  const allGood = rows.every((row) => row.state === 'running' && row.health === 'healthy');
  return allGood ? 0 : 1;
}

async function probeHealth(url: string, dispatcher: Agent): Promise<string> {
  const problem = await checkHealth(url, { dispatcher, timeoutMs: 3000 });
  if (problem === undefined) return 'healthy';
  return problem.startsWith('HTTP ') ? problem : 'unreachable';
}

async function down(argv: string[], io: Io): Promise<number> {
  const config = loadConfig(STACK, { argv, env: process.env });
  if (config.help) {
    io.out.write(`Usage: mcp-identity down [options]\n\n${renderConfigHelp(STACK)}\n`);
    return 0;
  }
  const dataDir = dataDirOf(config.values.dataDir, config.sources.dataDir);
  const state = readRunningStack(dataDir);
  if (!state) {
    io.out.write(`No stack is running from ${dataDir}.\n`);
    return 0;
  }
  process.kill(state.supervisorPid, 'SIGTERM');
  // Each service has 10 s to stop before it is killed; four in turn.
  const deadline = Date.now() + 60_000;
  while (isAlive(state.supervisorPid) && Date.now() < deadline) {
    await new Promise((settle) => setTimeout(settle, 100));
  }
  if (isAlive(state.supervisorPid)) {
    io.err.write(`The supervisor (pid ${state.supervisorPid}) is still stopping after 60 s.\n`);
    return 1;
  }
  io.out.write(`Stopped the stack in ${dataDir} (supervisor pid ${state.supervisorPid}).\n`);
  return 0;
}

async function connect(argv: string[], io: Io): Promise<number> {
  const config = loadConfig(CLIENT, { argv, env: process.env, allowPositionals: true });
  const [client] = config.positionals;
  if (config.help || !isMcpClient(client)) {
    const usage = `Usage: mcp-identity connect <${MCP_CLIENTS.join('|')}> [options]\n\n${renderConfigHelp(CLIENT)}\n`;
    if (config.help) {
      io.out.write(usage);
      return 0;
    }
    io.err.write(
      `${client === undefined ? 'Which client?' : `Unknown client "${client}".`}\n\n${usage}`,
    );
    return 2;
  }
  const { layout } = helperStack(config);
  // The configuration alone on stdout, so `connect vscode > .vscode/mcp.json` saves it.
  const { config: file, advice } = clientConfiguration(client, layout);
  io.err.write(advice);
  io.out.write(file);
  return 0;
}

function isMcpClient(name: string | undefined): name is McpClientName {
  return MCP_CLIENTS.some((client) => client === name);
}

async function token(argv: string[], io: Io): Promise<number> {
  const config = loadConfig(CLIENT, { argv, env: process.env });
  if (config.help) {
    io.out.write(
      `Usage: mcp-identity token --scopes "<scopes>" [options]\n\n${renderConfigHelp(CLIENT)}\n`,
    );
    return 0;
  }
  const { layout, secrets } = helperStack(config);
  const scopes = (config.values.scopes ?? '').split(/\s+/).filter(Boolean);
  const issued = await clientCredentialsToken(layout, secrets.clientApp, scopes);
  io.out.write(`${issued.accessToken}\n`);
  io.err.write(`scope: ${issued.scope || '(none)'}; expires in ${issued.expiresIn} s\n`);
  return 0;
}

async function call(argv: string[], io: Io): Promise<number> {
  const config = loadConfig(CLIENT, { argv, env: process.env, allowPositionals: true });
  const [tool] = config.positionals;
  if (config.help || tool === undefined) {
    io.out.write(
      `Usage: mcp-identity call <tool> --args '<json>' [--scopes "<scopes>"]\n\n${renderConfigHelp(CLIENT)}\n`,
    );
    return config.help ? 0 : 2;
  }
  let args: unknown;
  try {
    args = JSON.parse(config.values.args);
  } catch (error) {
    io.err.write(`--args is not valid JSON: ${(error as Error).message}\n`);
    return 2;
  }
  if (!isJsonObject(args)) {
    io.err.write("--args must be a JSON object of the tool's arguments\n");
    return 2;
  }
  const { layout, secrets } = helperStack(config);
  const scopes = config.values.scopes?.split(/\s+/).filter(Boolean) ?? scopesForTool(tool);
  const issued = await clientCredentialsToken(layout, secrets.clientApp, scopes);
  io.err.write(`token scopes: ${issued.scope || '(none)'}\n`);
  const outcome = await callToolThroughGateway(layout, issued.accessToken, tool, args);
  if (outcome.kind === 'refused') {
    io.out.write(
      `HTTP ${outcome.status}\nwww-authenticate: ${outcome.challenge ?? '(none)'}\n${outcome.body}\n`,
    );
    return 1;
  }
  io.out.write(`${resultText(outcome.result)}\n`);
  return outcome.result.isError ? 1 : 0;
}

async function demo(argv: string[], io: Io): Promise<number> {
  const config = loadConfig(CLIENT, { argv, env: process.env });
  if (config.help) {
    io.out.write(`Usage: mcp-identity demo [options]\n\n${renderConfigHelp(CLIENT)}\n`);
    return 0;
  }
  const { layout, secrets } = helperStack(config);
  const rows = await runDemo(layout, secrets);
  io.out.write(`${renderDemo(rows)}\n`);
  return rows.every((row) => row.ok) ? 0 : 1;
}

/** Runs a service package's own command with this process's terminal. */
async function delegate(
  packageName: '@mcp-identity/idp' | '@mcp-identity/gateway' | '@mcp-identity/arazzo-mcp',
  argv: string[],
): Promise<number> {
  const child = spawn(process.execPath, [serviceBin(packageName), ...argv], { stdio: 'inherit' });
  const [code, signal] = (await once(child, 'exit')) as [number | null, string | null];
  return code ?? (signal ? 1 : 0);
}
