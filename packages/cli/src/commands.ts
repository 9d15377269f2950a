import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { defineConfig, loadConfig, renderConfigHelp } from '@mcp-identity/common';
import { parse as parseYaml } from 'yaml';
import { renderDemo, runDemo } from './demo.js';
import { createProgress } from './progress.js';
import { callToolThroughGateway, clientCredentialsToken, resultText } from './stack/clients.js';
import { DEFAULT_PORTS, stackLayout } from './stack/layout.js';
import { SCIM_GATEWAY_RULES_FILE, serviceBin } from './stack/locations.js';
import { readStackSecrets, type StackSecrets } from './stack/secrets.js';
import { startStack } from './stack/start.js';
import { renderSummary } from './stack/summary.js';

const DATA_DIR = {
  type: 'string',
  description: 'Data directory of the stack',
  env: 'MCP_IDENTITY_DATA_DIR',
  default: '.data',
} as const;

const port = (name: string, fallback: number, env: string) =>
  ({
    type: 'integer',
    description: `${name} port`,
    env,
    default: fallback,
    schema: { minimum: 1, maximum: 65535 },
  }) as const;

const UP = defineConfig({
  dataDir: DATA_DIR,
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
});

const CLIENT = defineConfig({
  dataDir: DATA_DIR,
  scopes: { type: 'string', description: 'Space-separated scopes for the token' },
  args: { type: 'string', description: 'Tool arguments as a JSON object', default: '{}' },
  idpPort: UP.idpPort,
  gatewayHttpsPort: UP.gatewayHttpsPort,
  areaAPort: UP.areaAPort,
});

export const USAGE = `Usage: mcp-identity <command> [options]

Commands:
  up                      start the whole stack (IdP, SCIM MCP server, gateway, Area A) and bootstrap it
  token --scopes "<s>"    print a client-credentials token of the client application
  call <tool> --args '<json>' [--scopes "<s>"]
                          call a tool through the gateway with the MCP SDK client
  demo                    run the spec's decision table against the running stack
  idp <args>              the identity provider's own command (idp --help)
  gateway <args>          the gateway's own command
  arazzo-mcp <args>       the Arazzo MCP server's own command

Run "mcp-identity <command> --help" for a command's options.`;

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

async function up(argv: string[], io: Io): Promise<number> {
  const config = loadConfig(UP, { argv, env: process.env });
  if (config.help) {
    io.out.write(`Usage: mcp-identity up [options]\n\n${renderConfigHelp(UP)}\n`);
    return 0;
  }
  const v = config.values;
  const progress = createProgress(io.err);
  progress.info(`Starting mcp-identity (data in ${resolve(v.dataDir)})`);
  const stack = await startStack({
    dataDir: resolve(v.dataDir),
    ports: {
      idp: v.idpPort,
      mcp: v.mcpPort,
      gatewayHttps: v.gatewayHttpsPort,
      gatewayHttp: v.gatewayHttpPort,
      gatewayManagement: v.managementPort,
      areaA: v.areaAPort,
    },
    progress,
  });
  io.out.write(renderSummary(stack));
  const signal = await Promise.race([
    once(process, 'SIGINT').then(() => 'SIGINT'),
    once(process, 'SIGTERM').then(() => 'SIGTERM'),
    ...Object.entries(stack.services).map(([name, service]) =>
      service.exited.then((code) => `${name} exited (${code})`),
    ),
  ]);
  progress.info(`\nStopping (${signal})…`);
  await stack.stop();
  progress.info('Stopped.');
  return signal.startsWith('SIG') ? 0 : 1;
}

function clientLayout(v: {
  dataDir: string;
  idpPort: number;
  gatewayHttpsPort: number;
  areaAPort: number;
}) {
  const dataDir = resolve(v.dataDir);
  const layout = stackLayout(dataDir, {
    ...DEFAULT_PORTS,
    idp: v.idpPort,
    gatewayHttps: v.gatewayHttpsPort,
    areaA: v.areaAPort,
  });
  const secrets = readStackSecrets(dataDir);
  if (!secrets) throw new Error(`No stack in ${dataDir}: run "mcp-identity up" first.`);
  return { layout, secrets: secrets as StackSecrets };
}

async function token(argv: string[], io: Io): Promise<number> {
  const config = loadConfig(CLIENT, { argv, env: process.env });
  if (config.help) {
    io.out.write(
      `Usage: mcp-identity token --scopes "<scopes>" [options]\n\n${renderConfigHelp(CLIENT)}\n`,
    );
    return 0;
  }
  const { layout, secrets } = clientLayout(config.values);
  const scopes = (config.values.scopes ?? '').split(/\s+/).filter(Boolean);
  const issued = await clientCredentialsToken(layout, secrets.clientApp, scopes);
  io.out.write(`${issued.accessToken}\n`);
  io.err.write(`scope: ${issued.scope || '(none)'}; expires in ${issued.expiresIn} s\n`);
  return 0;
}

/** The scopes the gateway's rule for a tool asks for (allOf: all; anyOf: the first). */
export function scopesForTool(tool: string): string[] {
  const rules = parseYaml(readFileSync(SCIM_GATEWAY_RULES_FILE, 'utf8')) as {
    tools: { name: string; scopes: { allOf?: string[]; anyOf?: string[] } }[];
  };
  const rule = rules.tools.find((candidate) => candidate.name === tool);
  if (!rule) return [];
  return rule.scopes.allOf ?? rule.scopes.anyOf?.slice(0, 1) ?? [];
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
  let args: Record<string, unknown>;
  try {
    args = JSON.parse(config.values.args) as Record<string, unknown>;
  } catch (error) {
    io.err.write(`--args is not valid JSON: ${(error as Error).message}\n`);
    return 2;
  }
  const { layout, secrets } = clientLayout(config.values);
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
  const { layout, secrets } = clientLayout(config.values);
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
