import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parseArgs } from 'node:util';
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { parse as parseToml } from 'smol-toml';
import { parse as parseYaml } from 'yaml';
import { McpIdentityError } from './errors.js';
import { type CompiledSchema, compileTyped, isJsonObject } from './schema.js';

/** The schema of each field type: a field's value type is derived from it. */
const FIELD_SCHEMAS = {
  string: Type.String(),
  integer: Type.Integer(),
  number: Type.Number(),
  boolean: Type.Boolean(),
  'string[]': Type.Array(Type.String()),
} satisfies Record<string, TSchema>;

export type FieldType = keyof typeof FIELD_SCHEMAS;

type TypeOf<T extends FieldType> = Static<(typeof FIELD_SCHEMAS)[T]>;

export interface FieldSpec<T extends FieldType = FieldType> {
  type: T;
  description: string;
  default?: TypeOf<T>;
  /** Environment variable that sets it. */
  env?: string;
  /** Command-line flag name without dashes; defaults to the key in kebab-case; false: none. */
  flag?: string | false;
  /** Extra JSON Schema keywords the value must satisfy (minimum, enum, pattern, …); an `enum` narrows the value's type. */
  schema?: Record<string, unknown>;
  /** Never echo the value in error messages. */
  secret?: boolean;
  required?: boolean;
}

export type ConfigSpec = Record<string, FieldSpec>;

/** A field's type, narrowed to the values its `schema.enum` lists when it has one. */
type EnumOf<F, V> = F extends { schema: { enum: readonly (infer E)[] } } ? Extract<E, V> : V;

type ValueOf<F> =
  F extends FieldSpec<infer T>
    ? F extends { default: unknown } | { required: true }
      ? EnumOf<F, TypeOf<T>>
      : EnumOf<F, TypeOf<T>> | undefined
    : never;

export type ConfigValues<S extends ConfigSpec> = { -readonly [K in keyof S]: ValueOf<S[K]> };

/** Identity function that keeps the literal types of a spec, for ConfigValues inference. */
export function defineConfig<const S extends ConfigSpec>(spec: S): S {
  return spec;
}

export type ConfigSource = 'flag' | 'env' | 'file' | 'default';

export interface ConfigProblem {
  key: string;
  /** e.g. `flag --port`, `env var MCP_PORT`, `file gateway.toml` */
  source: string;
  message: string;
}

/** Start-up configuration is invalid; the process should exit with `exitCode`. */
export class ConfigError extends McpIdentityError {
  readonly code = 'ERR_CONFIG';
  readonly exitCode = 2;
  constructor(readonly problems: ConfigProblem[]) {
    super(
      `Invalid configuration:\n${problems.map((p) => `  - ${p.key} (${p.source}): ${p.message}`).join('\n')}`,
    );
  }
}

export interface LoadOptions {
  /** Command-line arguments after the command name. */
  argv?: string[];
  env?: Record<string, string | undefined>;
  /** A configuration file (TOML, YAML or JSON by extension). */
  file?: string;
  /** The key of a string field whose value, from flag, env or default, names the file. */
  fileKey?: string;
  /** Reads only this table/section of the file. */
  fileSection?: string;
  /** Accept arguments that are not flags (subcommand operands). */
  allowPositionals?: boolean;
}

export interface LoadedConfig<S extends ConfigSpec> {
  values: ConfigValues<S>;
  /** Where each value came from. */
  sources: Record<keyof S, ConfigSource>;
  positionals: string[];
  /** `--help` was given: print `renderConfigHelp` and exit 0. */
  help: boolean;
}

/**
 * Resolves each field from, in order of precedence, a command-line flag, an
 * environment variable, the configuration file and the default, then validates
 * every value. All problems are reported together in one ConfigError.
 */
export function loadConfig<const S extends ConfigSpec>(
  spec: S,
  options: LoadOptions = {},
): LoadedConfig<S> {
  const env = options.env ?? process.env;
  const problems: ConfigProblem[] = [];
  const flags = parseFlags(spec, options, problems);
  const fileKey = options.fileKey;
  const filePath =
    options.file ??
    (fileKey === undefined ? undefined : (flags.values[fileKey] ?? envValue(spec, fileKey, env)));
  const fileValues =
    typeof filePath === 'string' ? readConfigFile(spec, filePath, options, problems) : {};

  const resolved = Object.entries(spec).map(([key, field]) => {
    const flagName = flagOf(key, field);
    const candidates: [ConfigSource, string, unknown][] = [
      ['flag', `flag --${flagName}`, flagName === undefined ? undefined : flags.values[key]],
      ['env', `env var ${field.env}`, field.env === undefined ? undefined : env[field.env]],
      ['file', `file ${filePath}`, fileValues[key]],
      ['default', 'default', field.default],
    ];
    // An empty flag or variable is unset; a default is a value even when empty.
    const found = candidates.find(
      ([source, , raw]) => raw !== undefined && (raw !== '' || source === 'default'),
    );
    return { key, field, found };
  });
  const values: Record<string, unknown> = {};
  for (const { key, field, found } of resolved) {
    if (!found) continue;
    const [source, , raw] = found;
    values[key] =
      source === 'flag' || source === 'env' ? coerce(field.type, raw) : coerceFile(field.type, raw);
  }
  const schema = valuesSchema(spec);
  const valid = schema.is(values);
  const invalidKeys = new Set(valid ? [] : schema.issues(values).map((issue) => issue.path[0]));

  const sources: Record<string, ConfigSource> = {};
  for (const { key, field, found } of resolved) {
    if (!found) {
      if (field.required)
        problems.push({
          key,
          source: 'not set',
          message: `required: ${describeWhere(key, field)}`,
        });
      continue;
    }
    const [source, label, raw] = found;
    if (invalidKeys.has(key)) {
      const shown = field.secret ? '' : ` ${JSON.stringify(raw)}`;
      problems.push({
        key,
        source: label,
        message: `invalid value${shown}: expected ${describeExpected(field)}`,
      });
      continue;
    }
    sources[key] = source;
  }
  if (!valid || problems.length > 0) throw new ConfigError(problems);
  return {
    values,
    sources: sources as Record<keyof S, ConfigSource>,
    positionals: flags.positionals,
    help: flags.help,
  };
}

/** A field the values always hold: it has a default or must be set. */
function alwaysSet(field: FieldSpec): boolean {
  return field.default !== undefined || field.required === true;
}

const valuesSchemas = new WeakMap<ConfigSpec, CompiledSchema<unknown>>();

/**
 * The compiled schema of a spec's values: each field's type schema (FIELD_SCHEMAS) with its
 * extra keywords, required when `alwaysSet`. ConfigValues<S> is derived by the same two rules.
 */
function valuesSchema<S extends ConfigSpec>(spec: S): CompiledSchema<ConfigValues<S>> {
  let compiled = valuesSchemas.get(spec);
  if (!compiled) {
    const fields = Object.entries(spec);
    compiled = compileTyped({
      type: 'object',
      properties: Object.fromEntries(
        fields.map(([key, field]) => [key, { ...FIELD_SCHEMAS[field.type], ...field.schema }]),
      ),
      required: fields.filter(([, field]) => alwaysSet(field)).map(([key]) => key),
    });
    valuesSchemas.set(spec, compiled);
  }
  return compiled as CompiledSchema<ConfigValues<S>>;
}

/** `--help` text: one line per option with its env var and default. */
export function renderConfigHelp(spec: ConfigSpec): string {
  const rows = Object.entries(spec).map(([key, field]) => {
    const flag = flagOf(key, field);
    const name =
      flag === undefined
        ? `(${field.env ?? key})`
        : `--${flag}${field.type === 'boolean' ? '' : ` <${field.type}>`}`;
    const extra = [
      field.env && flag !== undefined ? `env ${field.env}` : undefined,
      field.default !== undefined && !field.secret
        ? `default ${JSON.stringify(field.default)}`
        : undefined,
      field.required ? 'required' : undefined,
    ].filter(Boolean);
    return [name, `${field.description}${extra.length ? ` [${extra.join(', ')}]` : ''}`] as const;
  });
  const width = Math.max(...rows.map(([name]) => name.length), 10) + 2;
  return rows.map(([name, text]) => `  ${name.padEnd(width)}${text}`).join('\n');
}

/** The command-line flag that sets the field `key` (`--idp-port`), or undefined when it has none. */
export function commandLineFlag(key: string, field: FieldSpec): string | undefined {
  const name = flagOf(key, field);
  return name === undefined ? undefined : `--${name}`;
}

function flagOf(key: string, field: FieldSpec): string | undefined {
  if (field.flag === false) return undefined;
  return field.flag ?? key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`).replace(/[._]/g, '-');
}

function envValue(spec: ConfigSpec, key: string, env: Record<string, string | undefined>) {
  const name = spec[key]?.env;
  return (name === undefined ? undefined : env[name]) ?? spec[key]?.default;
}

function describeWhere(key: string, field: FieldSpec): string {
  const flag = commandLineFlag(key, field);
  const ways = [
    flag && `flag ${flag}`,
    field.env && `env var ${field.env}`,
    'the configuration file',
  ];
  return `set it with ${ways.filter(Boolean).join(', ')}`;
}

function parseFlags(spec: ConfigSpec, options: LoadOptions, problems: ConfigProblem[]) {
  const byFlag = new Map<string, string>();
  const parseOptions: Record<string, { type: 'string' | 'boolean'; multiple?: boolean }> = {
    help: { type: 'boolean' },
  };
  for (const [key, field] of Object.entries(spec)) {
    const flag = flagOf(key, field);
    if (flag === undefined) continue;
    byFlag.set(flag, key);
    parseOptions[flag] = {
      type: field.type === 'boolean' ? 'boolean' : 'string',
      multiple: field.type === 'string[]',
    };
  }
  const result: { values: Record<string, unknown>; positionals: string[]; help: boolean } = {
    values: {},
    positionals: [],
    help: false,
  };
  try {
    const parsed = parseArgs({
      args: options.argv ?? [],
      options: parseOptions,
      allowPositionals: options.allowPositionals ?? false,
      strict: true,
    });
    result.positionals = parsed.positionals;
    for (const [flag, value] of Object.entries(parsed.values)) {
      if (flag === 'help') result.help = value === true;
      else {
        const key = byFlag.get(flag);
        if (key !== undefined) result.values[key] = Array.isArray(value) ? value.join(',') : value;
      }
    }
  } catch (error) {
    problems.push({ key: 'arguments', source: 'command line', message: (error as Error).message });
  }
  return result;
}

function readConfigFile(
  spec: ConfigSpec,
  path: string,
  options: LoadOptions,
  problems: ConfigProblem[],
): Record<string, unknown> {
  let data: unknown;
  try {
    const text = readFileSync(path, 'utf8');
    const kind = extname(path).toLowerCase();
    data =
      kind === '.toml' ? parseToml(text) : kind === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    problems.push({
      key: 'file',
      source: `file ${path}`,
      message: `cannot read or parse it: ${reason}`,
    });
    return {};
  }
  const section =
    options.fileSection === undefined
      ? data
      : isJsonObject(data)
        ? data[options.fileSection]
        : undefined;
  if (section === undefined || section === null) return {};
  if (!isJsonObject(section)) {
    problems.push({
      key: options.fileSection ?? '(root)',
      source: `file ${path}`,
      message: 'expected a table of settings',
    });
    return {};
  }
  const entries = Object.entries(section);
  for (const [key] of entries) {
    if (!(key in spec))
      problems.push({
        key,
        source: `file ${path}`,
        message: `unknown setting (known: ${Object.keys(spec).join(', ')})`,
      });
  }
  return Object.fromEntries(entries);
}

function coerce(type: FieldType, raw: unknown): unknown {
  if (typeof raw !== 'string') return raw;
  const text = raw.trim();
  switch (type) {
    case 'integer':
      return /^[-+]?\d+$/.test(text) ? Number(text) : raw;
    case 'number':
      return text !== '' && Number.isFinite(Number(text)) ? Number(text) : raw;
    case 'boolean':
      if (/^(true|1|yes|on)$/i.test(text)) return true;
      if (/^(false|0|no|off)$/i.test(text)) return false;
      return raw;
    case 'string[]':
      return text
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== '');
    default:
      return raw;
  }
}

function coerceFile(type: FieldType, raw: unknown): unknown {
  return type === 'string[]' && typeof raw === 'string' ? coerce(type, raw) : raw;
}

function describeExpected(field: FieldSpec): string {
  const schema = field.schema ?? {};
  const parts: string[] = [
    {
      string: 'a string',
      integer: 'an integer',
      number: 'a number',
      boolean: 'true or false',
      'string[]': 'a comma-separated list',
    }[field.type],
  ];
  if (Array.isArray(schema.enum))
    parts.push(`one of ${schema.enum.map((v) => JSON.stringify(v)).join(', ')}`);
  if (schema.minimum !== undefined && schema.maximum !== undefined)
    parts.push(`from ${schema.minimum} to ${schema.maximum}`);
  else if (schema.minimum !== undefined) parts.push(`at least ${schema.minimum}`);
  else if (schema.maximum !== undefined) parts.push(`at most ${schema.maximum}`);
  if (typeof schema.pattern === 'string') parts.push(`matching /${schema.pattern}/`);
  if (typeof schema.minLength === 'number')
    parts.push(`of at least ${schema.minLength} characters`);
  if (typeof schema.description === 'string') parts.push(`(${schema.description})`);
  return parts.join(' ');
}
