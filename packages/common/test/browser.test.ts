import { createApp, createLogger, escapeHtml, setHtmlSecurityHeaders } from '@mcp-identity/common';
import { describeBrowser, startTestServer } from '@mcp-identity/common/testing';
import { expect, it } from 'vitest';

describeBrowser('Chromium smoke test', (browser) => {
  it('loads a page served by startServer and reads its text', async () => {
    const app = createApp({ logger: createLogger({ level: 'silent', pretty: false }) });
    app.get('/', (_request, reply) =>
      setHtmlSecurityHeaders(reply).send(
        `<!doctype html><title>smoke</title><h1 id="greeting">Hello ${escapeHtml('<agents>')}</h1>`,
      ),
    );
    const server = await startTestServer(app);
    const page = await browser().newPage();
    const response = await page.goto(`${server.url}/`);
    expect(response?.headers()['x-frame-options']).toBe('DENY');
    expect(await page.title()).toBe('smoke');
    expect(await page.textContent('#greeting')).toBe('Hello <agents>');
    await page.close();
  });
});
