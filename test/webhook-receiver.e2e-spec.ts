import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import request from 'supertest';
import { verifySignature } from '../tools/webhook-receiver';
import { createAccount } from './factories/accounts';
import { freePort, ROOT } from './helpers/service-process';
import { startTestApp, TestApp } from './helpers/test-app';

describe('a callback arrives on this machine: npm run webhook-receiver (docs/api.md §9, README tour step 4)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true' });
  });
  afterAll(() => t?.close());

  it('without the development switch, a callback on this machine is refused with the switch named', async () => {
    const strict = await startTestApp({ CALLBACK_ALLOW_PRIVATE_NETWORKS: 'false' });
    try {
      const account = await createAccount(strict);
      const res = await request(strict.http).post('/api/v1/filter/bulk').set(account.auth).send({ phones: ['+447400123456'], callback_url: 'http://localhost:4000/' });
      expect(res.status).toBe(400);
      expect(res.body.error.message).toContain('CALLBACK_ALLOW_PRIVATE_NETWORKS=true');
    } finally {
      await strict.close();
    }
  });

  it('receives a bulk job\'s callback and says its signature verifies with WEBHOOK_SECRET', async () => {
    const account = await createAccount(t);
    const settings = await request(t.http).get('/api/v1/settings').set(account.auth).expect(200);
    const port = await freePort();
    const receiver = spawn('npm', ['run', '-s', 'webhook-receiver', '--', '--port', String(port)], {
      cwd: ROOT,
      env: { ...process.env, WEBHOOK_SECRET: settings.body.webhook_secret as string },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    const listeners = new Set<() => void>();
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      for (const listener of listeners) listener();
    };
    receiver.stdout!.on('data', onData);
    receiver.stderr!.on('data', onData);
    /** Resolves when the receiver's output matches (checked at each chunk it prints); a generous deadline otherwise. */
    const waitFor = async (pattern: RegExp) => {
      await new Promise<void>((resolve) => {
        const check = () => {
          if (!pattern.test(output)) return;
          listeners.delete(check);
          clearTimeout(deadline);
          resolve();
        };
        const deadline = setTimeout(() => {
          listeners.delete(check);
          resolve();
        }, 60_000);
        listeners.add(check);
        check();
      });
      expect(output).toMatch(pattern);
    };
    try {
      await waitFor(/Waiting for callbacks/);
      // The switch it names is the current one (BULK_CALLBACK_ALLOW_PRIVATE_NETWORKS is its deprecated name).
      await waitFor(/Use it as callback_url \(or webhook_url\) with the service started with CALLBACK_ALLOW_PRIVATE_NETWORKS=true/);
      const job = await request(t.http)
        .post('/api/v1/filter/bulk')
        .set(account.auth)
        .send({ phones: ['+447400123456'], callback_url: `http://127.0.0.1:${port}/` })
        .expect(202);
      await waitFor(/POST \/: signature OK/);
      expect(output).toContain(`"id":"${job.body.id as string}"`);
      expect(output).toContain('"status":"completed"');
    } finally {
      process.kill(-receiver.pid!, 'SIGTERM');
    }
  }, 90_000);

  it('refuses a wrong secret and a stale timestamp', () => {
    const now = 1_800_000_000;
    const body = '{"id":"x"}';
    const sign = (secret: string, ts: number) => createHmac('sha256', secret).update(`${ts}.${body}`).digest('hex');
    expect(verifySignature('whsec_a', String(now), sign('whsec_a', now), body, now)).toBe(true);
    expect(verifySignature('whsec_a', String(now), `${sign('whsec_b', now)},${sign('whsec_a', now)}`, body, now)).toBe(true);
    expect(verifySignature('whsec_a', String(now), sign('whsec_b', now), body, now)).toBe(false);
    expect(verifySignature('whsec_a', String(now - 301), sign('whsec_a', now - 301), body, now)).toBe(false);
  });
});
