import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
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

/** A headless Chromium in a fresh user-data directory; `close` removes both. */
export async function launchChromium(): Promise<{
  context: BrowserContext;
  close(): Promise<void>;
}> {
  const userDataDir = mkdtempSync(join(tmpdir(), 'mcp-identity-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: CHROMIUM_ARGS,
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
 * machine missing the browser can never pass silently.
 */
export function describeBrowser(name: string, body: (browser: () => BrowserContext) => void): void {
  const missing = chromiumAvailable()
    ? undefined
    : `Chromium not found at ${CHROMIUM_PATH} (install Debian's chromium, or set CHROMIUM_PATH)`;
  describeRequiring(name, missing, () => {
    let launched: Awaited<ReturnType<typeof launchChromium>> | undefined;
    beforeAll(async () => {
      launched = await launchChromium();
    });
    afterAll(async () => {
      await launched?.close();
    });
    body(() => {
      if (!launched) throw new Error('Chromium did not start');
      return launched.context;
    });
  });
}
