import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BrowserContext, chromium, Page } from 'playwright-core';
import { CreditsService } from '../src/credits/credits.service';
import { createAccount, TestAccount } from './factories/accounts';
import { findChromium, pickLocalChromium } from './helpers/chromium';
import { startTestApp, TestApp } from './helpers/test-app';

/** How long the browser may take to start or to show something: a busy machine is slow to run Chromium; only a failure waits this long. */
const BROWSER_DEADLINE_MS = 90_000;

/**
 * Swagger UI in a real browser driven by playwright-core (which never downloads a browser). The
 * browser is CHROMIUM_PATH, a system Chromium, or the one shipped in the @sparticuz/chromium dev
 * dependency (test/helpers/chromium.ts), so this runs in full on a machine with nothing but Node.
 */
describe('Swagger UI (/docs) in headless Chromium', () => {
  let t: TestApp;
  let baseUrl: string;
  let account: TestAccount;
  let profile: string;
  let browser: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    const chromiumChoice = await findChromium();
    t = await startTestApp();
    await t.app.listen(0, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as { port: number }).port}`;
    account = await createAccount(t, { credits: 100 });
    profile = mkdtempSync(join(tmpdir(), 'pf-chromium-'));
    // A persistent context is how playwright takes a fresh --user-data-dir of our choosing.
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: chromiumChoice.executablePath,
      headless: true,
      args: chromiumChoice.args,
      timeout: BROWSER_DEADLINE_MS,
    });
    page = browser.pages()[0] ?? (await browser.newPage());
    page.setDefaultTimeout(BROWSER_DEADLINE_MS);
  }, 2 * BROWSER_DEADLINE_MS);

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
      // The form's own example, as a newcomer runs it first: a number that answers a carrier.
      expect(JSON.parse(await body.inputValue())).toEqual({ phone: '+447400123456' });
      // Nothing pre-filled in Cache-Control: a try never sends a freshness header unnoticed.
      await expect(operation.locator('tr[data-param-name="Cache-Control"] input').inputValue()).resolves.toBe('');
      await operation.locator('button.execute').click();

      const liveResponse = operation.locator('.live-responses-table .response');
      await liveResponse.locator('.response-col_status', { hasText: '200' }).waitFor();
      const shown = await liveResponse.locator('.response-col_description pre.microlight').first().innerText();
      const result = JSON.parse(shown) as Record<string, unknown>;
      expect(Object.keys(result).sort()).toEqual(['carrier', 'country', 'is_ported', 'line_type', 'status', 'valid']);
      expect(result).toMatchObject({ country: 'GB', valid: true, status: 'CONNECTED', carrier: 'Three', is_ported: false });
      expect((await operation.locator('.curl-command').innerText())).not.toMatch(/Cache-Control/i);
      // The curl command Swagger UI shows carries the key it was given, and no Idempotency-Key:
      // the form never pre-fills one, so a second try with another number is a new call.
      const curl = await operation.locator('.curl-command').innerText();
      expect(curl).toContain(`Bearer ${account.apiKey}`);
      expect(curl).not.toMatch(/Idempotency-Key/i);
      await expect(operation.locator('tr[data-param-name="Idempotency-Key"] input').inputValue()).resolves.toBe('');

      await body.fill(JSON.stringify({ phone: '+14155552671' }));
      await operation.locator('button.execute').click();
      // The second answer replaces the first: 200 again (not 409), for the US number.
      await liveResponse.locator('.response-col_description pre.microlight', { hasText: '"US"' }).first().waitFor();
      await liveResponse.locator('.response-col_status', { hasText: '200' }).waitFor();
    });

    // Charged like any other call: the default settings (network status) cost 4 credits, twice.
    await expect(t.app.get(CreditsService).balance(account.id)).resolves.toBe(92);
  }, 3 * BROWSER_DEADLINE_MS);
});

describe('the Chromium the browser tests use', () => {
  const only = (...present: string[]) => (path: string) => present.includes(path);

  it('takes CHROMIUM_PATH first, then a system Chromium, then the npm package', () => {
    expect(pickLocalChromium({ CHROMIUM_PATH: '/opt/chrome' }, only('/opt/chrome', '/usr/bin/chromium'))).toEqual({
      executablePath: '/opt/chrome',
      source: 'CHROMIUM_PATH',
    });
    expect(pickLocalChromium({}, only('/usr/bin/chromium'))).toEqual({ executablePath: '/usr/bin/chromium', source: 'system' });
    expect(pickLocalChromium({}, only())).toEqual({ source: 'npm' });
    expect(pickLocalChromium({ CHROMIUM_SOURCE: 'npm', CHROMIUM_PATH: '/opt/chrome' }, only('/opt/chrome'))).toEqual({ source: 'npm' });
    expect(() => pickLocalChromium({ CHROMIUM_PATH: '/nowhere/chrome' }, only())).toThrow('CHROMIUM_PATH=/nowhere/chrome: no such file');
  });

  it('the npm package\'s Chromium launches and clicks, whether or not a system one exists', async () => {
    const npm = await findChromium({ CHROMIUM_SOURCE: 'npm' });
    expect(npm.source).toBe('npm');
    const browser = await chromium.launch({ executablePath: npm.executablePath, args: npm.args, headless: true, timeout: BROWSER_DEADLINE_MS });
    try {
      const page = await browser.newPage();
      await page.setContent('<button onclick="document.title = \'clicked\'">go</button>');
      await page.click('button');
      await expect(page.title()).resolves.toBe('clicked');
    } finally {
      await browser.close();
    }
  }, 2 * BROWSER_DEADLINE_MS);
});
