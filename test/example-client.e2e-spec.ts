import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { BUILT_IN_CHECKS } from '../src/checks/built-in-checks';
import { createAccount } from './factories/accounts';
import { startTestApp, TestApp } from './helpers/test-app';

const ROOT = resolve(__dirname, '..');
const TS_NODE = require.resolve('ts-node/dist/bin.js');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `npx ts-node --transpile-only examples/typed-client.ts`, as README shows it, in a child process. */
async function runExample(env: Record<string, string | undefined>, args: string[] = []): Promise<Run> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [TS_NODE, '--transpile-only', 'examples/typed-client.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, API_KEY: undefined, BASE_URL: undefined, ...env },
      timeout: 30_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

describe('examples/typed-client.ts (openapi-fetch + the generated types) against a running service', () => {
  let t: TestApp;
  let baseUrl: string;

  beforeAll(async () => {
    t = await startTestApp();
    await t.app.listen(0, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as { port: number }).port}`;
  });
  afterAll(() => t?.close());

  it('reads the balance and settings, checks a number and sees it charged', async () => {
    const account = await createAccount(t, { credits: 100 });
    const run = await runExample({ API_KEY: account.apiKey, BASE_URL: baseUrl }, ['+447400123456']);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toBe('balance: 100 credits');
    // Every built-in check, each as a new account has it (the example prints them all).
    const checks = BUILT_IN_CHECKS.map((check) => `${check.name}=${check.defaultEnabled ? 'on' : 'off'}`).join(' ');
    expect(lines[1]).toBe(`settings: ${checks}, 4 credits per call`);
    expect(lines[2]).toMatch(/^filter \+447400123456: \{.*\}$/);
    const result = JSON.parse(lines[2].slice(lines[2].indexOf('{'))) as Record<string, unknown>;
    expect(Object.keys(result).sort()).toEqual(['carrier', 'country', 'is_ported', 'line_type', 'status', 'valid']);
    expect(result).toMatchObject({ country: 'GB', valid: true, status: 'CONNECTED', line_type: 'UNKNOWN', is_ported: false });
    expect(lines[3]).toMatch(/^rate limit: \d+ of \d+ left$/);
    expect(lines[4]).toBe('balance after: 96 credits');
    expect(lines[5]).toBe('bulk quote: 2 of 2 billable, 8 credits, covered');
  }, 60_000);

  it('prints the code and message of an error answer and exits 1', async () => {
    const run = await runExample({ API_KEY: 'pf_live_00000000000000000000000000000000', BASE_URL: baseUrl });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^GET \/api\/v1\/balance: 401 INVALID_API_KEY: /);
  }, 60_000);

  it('asks for API_KEY when it is not set (exit 2)', async () => {
    const run = await runExample({ BASE_URL: baseUrl });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('Set API_KEY');
  }, 60_000);
});
