import { createHash, X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { StartupError } from '../errors.js';
import { describeRequiring } from './requires.js';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

// Without the background-networking flags Chromium keeps dialling Google's
// services, which this closed network refuses; the rest keep it headless and quiet.
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

export function chromiumAvailable(): boolean {
  return existsSync(CHROMIUM_PATH);
}

export interface ChromiumOptions {
  /**
   * PEM files of server certificates the browser accepts although no system root signed
   * them (a test stack's HTTPS services): each is pinned by the SHA-256 of its public key,
   * so every other certificate is still verified as usual.
   */
  trustedCertificates?: string[];
}

/** Chromium's pin of a certificate: the base64 SHA-256 of its SubjectPublicKeyInfo. */
function spkiPin(pemFile: string): string {
  const spki = new X509Certificate(readFileSync(pemFile)).publicKey.export({
    type: 'spki',
    format: 'der',
  });
  return createHash('sha256').update(spki).digest('base64');
}

/** A headless Chromium in a fresh user-data directory; `close` removes both. */
export async function launchChromium(options: ChromiumOptions = {}): Promise<{
  context: BrowserContext;
  close(): Promise<void>;
}> {
  const userDataDir = mkdtempSync(join(tmpdir(), 'mcp-identity-chromium-'));
  const pins = (options.trustedCertificates ?? []).map(spkiPin);
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      ...CHROMIUM_ARGS,
      ...(pins.length > 0 ? [`--ignore-certificate-errors-spki-list=${pins.join(',')}`] : []),
    ],
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A describe block whose tests get a Chromium context. Without Chromium the
 * block is skipped with a message locally, and fails when CI is set, so a CI
 * machine missing the browser can never pass silently. `options` is read when
 * the browser starts (after the enclosing blocks' `beforeAll`), so it may name
 * certificates those create.
 */
export function describeBrowser(
  name: string,
  body: (browser: () => BrowserContext) => void,
  options: () => ChromiumOptions = () => ({}),
): void {
  const missing = chromiumAvailable()
    ? undefined
    : `Chromium not found at ${CHROMIUM_PATH} (install Debian's chromium, or set CHROMIUM_PATH)`;
  describeRequiring(name, missing, () => {
    let launched: Awaited<ReturnType<typeof launchChromium>> | undefined;
    beforeAll(async () => {
      launched = await launchChromium(options());
    });
    afterAll(async () => {
      await launched?.close();
    });
    body(() => {
      if (!launched) throw new StartupError('Chromium did not start');
      return launched.context;
    });
  });
}
