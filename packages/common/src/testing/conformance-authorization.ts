import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runConformance } from './conformance.js';

/** One check of the suite's results (`checks.json`). */
export interface ConformanceCheck {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  errorMessage?: string;
}

export interface AuthorizationConformanceOptions {
  /** The authorization server's issuer. */
  url: string;
  /** A client registered with `http://127.0.0.1:<port>/callback` as a redirect URI. */
  clientId: string;
  port: number;
  /** The RFC 8707 resource the token is for, if any. */
  resource?: string;
  /**
   * Plays the user: given the authorization URL the suite prints, signs in and returns the
   * redirect the authorization server answers with (the suite's callback is then fetched).
   */
  signIn(authorizationUrl: string): Promise<URL>;
}

/**
 * The suite's `authorization` scenarios against one authorization server (metadata, with its
 * CIMD check, and the code grant): every check it recorded, and the run's exit code.
 */
export async function runAuthorizationConformance(
  options: AuthorizationConformanceOptions,
): Promise<{ code: number | null; output: string; checks: ConformanceCheck[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'conformance-authorization-'));
  try {
    const run = runConformance(
      [
        'authorization',
        '--url',
        options.url,
        '--client-id',
        options.clientId,
        ...(options.resource === undefined ? [] : ['--resource', options.resource]),
        '-p',
        String(options.port),
        '-o',
        dir,
      ],
      { cwd: dir },
    );
    let signInError: unknown;
    const watch = () => {
      const url = /^\s*(https?:\/\/\S+\?\S*response_type=code\S*)\s*$/m.exec(run.output())?.[1];
      if (url === undefined) return;
      run.child.stdout.off('data', watch);
      options
        .signIn(url)
        .then((redirect) => fetch(redirect))
        .catch((error: unknown) => {
          signInError = error;
          run.child.kill('SIGTERM');
        });
    };
    run.child.stdout.on('data', watch);
    const { code, output } = await run.done;
    if (signInError !== undefined) throw signInError;
    const checks = readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .flatMap(
        (entry) =>
          JSON.parse(
            readFileSync(join(dir, entry.name, 'checks.json'), 'utf8'),
          ) as ConformanceCheck[],
      );
    return { code, output, checks };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
