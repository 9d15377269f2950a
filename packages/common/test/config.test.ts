import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ConfigError,
  commandLineFlag,
  defineConfig,
  loadConfig,
  renderConfigHelp,
} from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
import { describe, expect, expectTypeOf, it } from 'vitest';

const spec = defineConfig({
  port: {
    type: 'integer',
    description: 'TCP port',
    default: 5000,
    env: 'APP_PORT',
    schema: { minimum: 0, maximum: 65535 },
  },
  host: { type: 'string', description: 'Interface', default: '127.0.0.1', env: 'APP_HOST' },
  verbose: { type: 'boolean', description: 'Chatty', env: 'APP_VERBOSE' },
  scopes: { type: 'string[]', description: 'Scopes', env: 'APP_SCOPES' },
  mode: { type: 'string', description: 'Mode', default: 'a', schema: { enum: ['a', 'b'] } },
  secret: {
    type: 'string',
    description: 'Secret',
    env: 'APP_SECRET',
    secret: true,
    schema: { minLength: 8 },
  },
  config: { type: 'string', description: 'Configuration file', env: 'APP_CONFIG' },
});

const tempDir = useTempDir();

function configFile(contents: string, name = 'app.toml'): string {
  const path = join(tempDir(), name);
  writeFileSync(path, contents);
  return path;
}

function problemsOf(run: () => unknown) {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig precedence', () => {
  it('uses defaults when nothing else is set', () => {
    const { values, sources } = loadConfig(spec, { argv: [], env: {} });
    expect(values.port).toBe(5000);
    expect(values.host).toBe('127.0.0.1');
    expect(values.verbose).toBeUndefined();
    expect(sources.port).toBe('default');
  });

  it('prefers file over default, env over file, flag over env', () => {
    const file = configFile('port = 7000\nhost = "0.0.0.0"\nmode = "b"\n');
    const fromFile = loadConfig(spec, { argv: [], env: {}, file });
    expect([fromFile.values.port, fromFile.values.host, fromFile.values.mode]).toEqual([
      7000,
      '0.0.0.0',
      'b',
    ]);

    const fromEnv = loadConfig(spec, { argv: [], env: { APP_PORT: '7100' }, file });
    expect(fromEnv.values.port).toBe(7100);
    expect(fromEnv.sources.port).toBe('env');
    expect(fromEnv.values.host).toBe('0.0.0.0');

    const fromFlag = loadConfig(spec, {
      argv: ['--port', '7200'],
      env: { APP_PORT: '7100' },
      file,
    });
    expect(fromFlag.values.port).toBe(7200);
    expect(fromFlag.sources.port).toBe('flag');
  });

  it('finds the file through its own flag or env var, in YAML and JSON too', () => {
    const yaml = configFile('port: 7300\n', 'app.yaml');
    expect(
      loadConfig(spec, { argv: ['--config', yaml], env: {}, fileKey: 'config' }).values.port,
    ).toBe(7300);
    const json = configFile('{"port": 7400}', 'app.json');
    expect(
      loadConfig(spec, { argv: [], env: { APP_CONFIG: json }, fileKey: 'config' }).values.port,
    ).toBe(7400);
  });

  it('coerces booleans and lists from strings', () => {
    const { values } = loadConfig(spec, {
      argv: ['--verbose'],
      env: { APP_SCOPES: 'a, b,,c' },
    });
    expect(values.verbose).toBe(true);
    expect(values.scopes).toEqual(['a', 'b', 'c']);
    expect(loadConfig(spec, { argv: [], env: { APP_VERBOSE: 'no' } }).values.verbose).toBe(false);
  });

  it('types each value from its field type, an enum narrowing it to the listed values', () => {
    const { values } = loadConfig(spec, { argv: ['--mode', 'b', '--scopes', 'x,y'], env: {} });
    expect(values).toMatchObject({ port: 5000, mode: 'b', scopes: ['x', 'y'] });
    expectTypeOf(values.port).toEqualTypeOf<number>();
    expectTypeOf(values.mode).toEqualTypeOf<'a' | 'b'>();
    expectTypeOf(values.scopes).toEqualTypeOf<string[] | undefined>();
    expectTypeOf(values.verbose).toEqualTypeOf<boolean | undefined>();
  });

  it('reports --help without failing', () => {
    expect(loadConfig(spec, { argv: ['--help'], env: {} }).help).toBe(true);
    const help = renderConfigHelp(spec);
    expect(help).toContain('--port <integer>');
    expect(help).toContain('env APP_PORT');
    expect(help).toContain('default 5000');
  });

  it('names the flag that sets a field, as the parser reads it', () => {
    const flags = defineConfig({
      idpPort: { type: 'integer', description: 'IdP port' },
      dataDir: { type: 'string', description: 'data', flag: 'dir' },
      secret: { type: 'string', description: 'not on the command line', flag: false },
    });
    expect(commandLineFlag('idpPort', flags.idpPort)).toBe('--idp-port');
    expect(commandLineFlag('dataDir', flags.dataDir)).toBe('--dir');
    expect(commandLineFlag('secret', flags.secret)).toBeUndefined();
    const argv = ['--idp-port', '9443', '--dir', '/tmp/x'];
    expect(loadConfig(flags, { argv, env: {} }).values).toMatchObject({
      idpPort: 9443,
      dataDir: '/tmp/x',
    });
  });
});

describe('loadConfig errors', () => {
  it('names the key, the source and what was expected', () => {
    const [problem] = problemsOf(() => loadConfig(spec, { argv: [], env: { APP_PORT: 'eighty' } }));
    expect(problem).toEqual({
      key: 'port',
      source: 'env var APP_PORT',
      message: 'invalid value "eighty": expected an integer from 0 to 65535',
    });
  });

  it('reports every problem at once, from each source', () => {
    const file = configFile('mode = "c"\nprot = 1\n');
    const problems = problemsOf(() =>
      loadConfig(spec, { argv: ['--port', '70000'], env: {}, file }),
    );
    expect(problems.map((p) => `${p.key} <${p.source}>`)).toEqual([
      `prot <file ${file}>`,
      'port <flag --port>',
      `mode <file ${file}>`,
    ]);
    expect(problems[1]?.message).toBe('invalid value "70000": expected an integer from 0 to 65535');
    expect(problems[2]?.message).toBe('invalid value "c": expected a string one of "a", "b"');
    expect(problems[0]?.message).toMatch(/^unknown setting/);
  });

  it('never echoes a secret value', () => {
    const [problem] = problemsOf(() =>
      loadConfig(spec, { argv: [], env: { APP_SECRET: 'short' } }),
    );
    expect(problem?.message).toBe('invalid value: expected a string of at least 8 characters');
    expect(JSON.stringify(problem)).not.toContain('short');
  });

  it('rejects unknown flags and unreadable files', () => {
    const [flag] = problemsOf(() => loadConfig(spec, { argv: ['--prot', '1'], env: {} }));
    expect(flag?.message).toContain("Unknown option '--prot'");
    const [file] = problemsOf(() =>
      loadConfig(spec, { argv: [], env: {}, file: join(tempDir(), 'missing.toml') }),
    );
    expect(file?.message).toBe('cannot read or parse it: ENOENT');
  });

  it('makes the process exit with code 2 and a readable message', () => {
    const result = spawnSync(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'fixtures/config-cli.ts'), '--port', 'x'],
      { encoding: 'utf8', env: { ...process.env, DEMO_PORT: '' } },
    );
    expect(result.status).toBe(2);
    expect(result.stderr).toBe(
      'Invalid configuration:\n  - port (flag --port): invalid value "x": expected an integer from 0 to 65535\n',
    );
    const ok = spawnSync(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'fixtures/config-cli.ts')],
      { encoding: 'utf8', env: { ...process.env, DEMO_PORT: '6001' } },
    );
    expect(ok.status).toBe(0);
    expect(ok.stdout).toBe('port=6001\n');
  });
});
