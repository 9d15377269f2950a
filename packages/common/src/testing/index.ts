export { CHROMIUM_PATH, chromiumAvailable, describeBrowser, launchChromium } from './browser.js';
export { startTestServer } from './servers.js';
export { useTempDir } from './temp.js';
