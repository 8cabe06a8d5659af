import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BrowserContext, chromium, Page } from 'playwright-core';
import { CreditsService } from '../src/credits/credits.service';
import { createAccount, TestAccount } from './factories/accounts';
import { startTestApp, TestApp } from './helpers/test-app';

/**
 * Swagger UI in a real browser: Debian's Chromium driven by playwright-core (which never downloads a
 * browser). Missing Chromium is a failure, not a skip: CI installs it (.ci/run).
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const INSTALL_HINT = 'apt-get update && apt-get install -y chromium';
// Without the background-networking flags Chromium's own connections are refused on a closed network.
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

describe('Swagger UI (/docs) in headless Chromium', () => {
  let t: TestApp;
  let baseUrl: string;
  let account: TestAccount;
  let profile: string;
  let browser: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`Chromium not found at ${CHROMIUM}. Install it with:\n\n    ${INSTALL_HINT}\n\n(or set CHROMIUM_PATH).`);
    }
    t = await startTestApp();
    await t.app.listen(0, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as { port: number }).port}`;
    account = await createAccount(t, { credits: 100 });
    profile = mkdtempSync(join(tmpdir(), 'pf-chromium-'));
    // A persistent context is how playwright takes a fresh --user-data-dir of our choosing.
    browser = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, timeout: 30_000 });
    page = browser.pages()[0] ?? (await browser.newPage());
    page.setDefaultTimeout(15_000);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    await t?.close();
  });

  /** Runs a browser step; on failure saves a screenshot and names it in the error. */
  async function withScreenshot(name: string, steps: () => Promise<void>): Promise<void> {
    try {
      await steps();
    } catch (error) {
      const path = join(tmpdir(), `swagger-ui-${name}-${Date.now()}.png`);
      const saved = await page.screenshot({ path, fullPage: true }).then(
        () => `screenshot: ${path}`,
        (screenshotError: Error) => `no screenshot (${screenshotError.message})`,
      );
      if (error instanceof Error) {
        error.message += `\n${saved}`;
        error.stack = `${saved}\n${error.stack ?? ''}`;
      }
      throw error;
    }
  }

  it('authorizes with an API key and runs "Try it out" on POST /api/v1/filter: 200 with the six fields', async () => {
    await withScreenshot('filter', async () => {
      await page.goto(`${baseUrl}/docs`);
      await page.locator('.swagger-ui .info .title', { hasText: 'Phone Filter API' }).waitFor();

      // Authorize: the dialog lists both bearer schemes; fill the api-key one.
      await page.locator('.scheme-container button.authorize').click();
      const apiKeyScheme = page.locator('.auth-container', { has: page.locator('h4', { hasText: /^api-key/ }) });
      await apiKeyScheme.locator('input').fill(account.apiKey);
      await apiKeyScheme.locator('button.authorize').click();
      await apiKeyScheme.locator('button', { hasText: 'Logout' }).waitFor();
      await apiKeyScheme.locator('button.btn-done').click();
      await page.locator('.dialog-ux').waitFor({ state: 'detached' });

      // Try it out on POST /api/v1/filter.
      const operation = page.locator('#operations-filter-FilterController_filter');
      await operation.locator('.opblock-summary').click();
      await operation.locator('button.try-out__btn').click();
      const body = operation.locator('textarea.body-param__text');
      await body.fill(JSON.stringify({ phone: '+447400123456' }));
      await operation.locator('button.execute').click();

      const liveResponse = operation.locator('.live-responses-table .response');
      await liveResponse.locator('.response-col_status', { hasText: '200' }).waitFor();
      const shown = await liveResponse.locator('.response-col_description pre.microlight').first().innerText();
      const result = JSON.parse(shown) as Record<string, unknown>;
      expect(Object.keys(result).sort()).toEqual(['carrier', 'country', 'is_ported', 'line_type', 'status', 'valid']);
      expect(result).toMatchObject({ country: 'GB', valid: true, status: 'CONNECTED', is_ported: false });
      // The curl command Swagger UI shows carries the key it was given.
      await expect(operation.locator('.curl-command').innerText()).resolves.toContain(`Bearer ${account.apiKey}`);
    });

    // Charged like any other call: the default settings (network status) cost 4 credits.
    await expect(t.app.get(CreditsService).balance(account.id)).resolves.toBe(96);
  }, 90_000);
});
