import { ConfigError, type ConfigValues, loadConfig } from '@mcp-identity/common';
import type { DelegatedAuthOptions } from '../http/delegated-auth.js';
import type { RequiredHeader } from '../http/required-header.js';
import { isHttpUrl, parseAllowedOrigins, parseSourceServers } from './option-values.js';
import {
  ACCOUNT_ACTIONS,
  accountFields,
  dataDirField,
  documentFields,
  serveFields,
  toolsFields,
} from './options.js';
import { resolveRequiredHeader } from './required-header-option.js';

export type AccountAction = (typeof ACCOUNT_ACTIONS)[number];

export type Command =
  | { name: 'help' }
  | { name: 'serve'; options: ServeOptions }
  | { name: 'validate' | 'tools'; options: DocumentOptions }
  | { name: 'accounts'; action: AccountAction; options: AccountsOptions };

type AccountValues = ConfigValues<typeof accountFields>;

export type AccountsOptions = Omit<AccountValues, 'email'> & {
  /** Absent only for `list`. */
  email?: AccountValues['email'];
};

type DocumentValues = ConfigValues<typeof toolsFields>;

export type DocumentOptions = Omit<DocumentValues, 'sourceServer'> & {
  /** `--source-server` entries by source description name. */
  sourceServers: Record<string, string>;
};

/** Options of serve whose raw value is replaced by a parsed one. */
type ParsedServeValues = {
  /** `--require-header` with its value resolved. */
  requiredHeader?: RequiredHeader;
  allowedOrigins: string[];
  /** The `--delegated-*` options, when `--delegated-issuer` is given. */
  delegatedAuth?: DelegatedAuthOptions;
};

export type ServeOptions = DocumentOptions &
  Omit<
    ConfigValues<typeof serveFields>,
    | keyof DocumentValues
    | keyof ParsedServeValues
    | 'allowedOrigin'
    | 'requireHeader'
    | 'requireHeaderFile'
    | 'delegatedIssuer'
    | 'delegatedAudience'
    | 'delegatedJwksUrl'
    | 'delegatedResource'
  > &
  ParsedServeValues;

/** Parses the command line; throws ConfigError (exit 2) for anything it cannot accept. */
export function parseCommandLine(
  argv: readonly string[],
  env: Record<string, string | undefined>,
): Command {
  const [name, ...rest] = argv;
  // Help wins over everything else, even over missing required options.
  if (
    name === undefined ||
    name === 'help' ||
    argv.some((arg) => arg === '--help' || arg === '-h')
  ) {
    return { name: 'help' };
  }
  if (name === 'serve') {
    const { values } = loadConfig(serveFields, { argv: rest, env });
    const options: ServeOptions = {
      ...values,
      sourceServers: parseSourceServers(values.sourceServer ?? []),
      requiredHeader: resolveRequiredHeader(values, env),
      allowedOrigins: parseAllowedOrigins(values.allowedOrigin ?? []),
      delegatedAuth: delegatedAuthOptions(values),
    };
    checkAuthOptions(options);
    return { name, options };
  }
  if (name === 'accounts') return parseAccountsCommand(rest, env);
  if (name === 'tools') {
    return { name, options: documentOptions(loadConfig(toolsFields, { argv: rest, env }).values) };
  }
  if (name === 'validate') {
    const { values } = loadConfig(documentFields, { argv: rest, env });
    return {
      name,
      options: documentOptions({ ...values, honorRequired: false, paramDescriptions: false }),
    };
  }
  throw new ConfigError([
    {
      key: 'command',
      source: 'command line',
      message: `unknown command '${name}' (expected serve, validate or tools; see --help)`,
    },
  ]);
}

function documentOptions(values: DocumentValues): DocumentOptions {
  return {
    arazzo: values.arazzo,
    sourceServers: parseSourceServers(values.sourceServer ?? []),
    honorRequired: values.honorRequired,
    paramDescriptions: values.paramDescriptions,
  };
}

type ServeValues = ConfigValues<typeof serveFields>;

/** `--delegated-*`: all but the issuer need it; the URLs must be http(s). */
function delegatedAuthOptions(values: ServeValues): DelegatedAuthOptions | undefined {
  const { delegatedIssuer, delegatedAudience, delegatedJwksUrl, delegatedResource } = values;
  const urls = {
    delegatedIssuer,
    delegatedAudience,
    delegatedJwksUrl,
    delegatedResource,
  } as const;
  for (const [key, value] of Object.entries(urls)) {
    if (value === undefined) continue;
    const flag = key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    const source = `flag --${flag}`;
    if (key !== 'delegatedIssuer' && delegatedIssuer === undefined) {
      throw new ConfigError([{ key, source, message: 'needs --delegated-issuer' }]);
    }
    if (!isHttpUrl(value)) {
      throw new ConfigError([
        {
          key,
          source,
          message: `invalid value ${JSON.stringify(value)}: expected an http(s) URL`,
        },
      ]);
    }
  }
  if (delegatedIssuer === undefined) return undefined;
  if (delegatedAudience === undefined) {
    throw new ConfigError([
      {
        key: 'delegatedAudience',
        source: 'flag --delegated-audience or env var ARAZZO_MCP_DELEGATED_AUDIENCE',
        message: "--delegated-issuer needs this server's own URL as the audience",
      },
    ]);
  }
  return {
    issuer: delegatedIssuer,
    audience: delegatedAudience,
    ...(delegatedJwksUrl !== undefined && { jwksUrl: delegatedJwksUrl }),
    ...(delegatedResource !== undefined && { resource: delegatedResource }),
  };
}

function checkAuthOptions(options: ServeOptions): void {
  const problem = (key: string, source: string, message: string) => {
    throw new ConfigError([{ key, source, message }]);
  };
  if (options.auth === 'builtin' && options.transport === 'stdio') {
    problem('auth', 'flag --auth or env var ARAZZO_MCP_AUTH', 'builtin needs --transport http');
  }
  if (options.delegatedAuth && (options.auth === 'builtin' || options.transport === 'stdio')) {
    problem(
      'delegatedIssuer',
      'flag --delegated-issuer or env var ARAZZO_MCP_DELEGATED_ISSUER',
      'delegated calls need --transport http and --auth none (the gateway authenticates)',
    );
  }
  if (options.stateUrl !== undefined && options.auth !== 'builtin') {
    problem('stateUrl', 'flag --state-url or env var ARAZZO_MCP_STATE_URL', 'needs --auth builtin');
  }
  if (options.databaseUrl !== undefined && options.auth !== 'builtin') {
    problem(
      'databaseUrl',
      'flag --database-url or env var ARAZZO_MCP_DATABASE_URL',
      'needs --auth builtin',
    );
  }
  if (options.publicUrl !== undefined && !isHttpUrl(options.publicUrl)) {
    problem(
      'publicUrl',
      'flag --public-url or env var ARAZZO_MCP_PUBLIC_URL',
      `invalid value ${JSON.stringify(options.publicUrl)}: expected an http(s) URL`,
    );
  }
}

function parseAccountsCommand(
  argv: readonly string[],
  env: Record<string, string | undefined>,
): Command {
  const [operand, ...rest] = argv;
  const action = ACCOUNT_ACTIONS.find((known) => known === operand);
  if (action === undefined) {
    throw new ConfigError([
      {
        key: 'command',
        source: 'command line',
        message: `unknown accounts action '${operand ?? ''}' (expected add, list, remove or passwd)`,
      },
    ]);
  }
  if (action === 'list') {
    const { values } = loadConfig(dataDirField, { argv: [...rest], env });
    return { name: 'accounts', action, options: { ...values, passwordStdin: false } };
  }
  const { values } = loadConfig(accountFields, { argv: [...rest], env });
  return { name: 'accounts', action, options: values };
}
