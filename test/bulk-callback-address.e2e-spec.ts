import http from 'node:http';
import { AddressInfo } from 'node:net';
import request from 'supertest';
import dns from 'node:dns';
import { CallbackClient, CallbackFailedError } from '../src/webhooks/callback.client';
import { createAccount } from './factories/accounts';
import { ledgerState } from './helpers/ledger';
import { startTestApp, TestApp } from './helpers/test-app';

/** With the default configuration, callbacks go to public addresses only. */
describe('bulk callback_url: public addresses only (server-side request forgery)', () => {
  let t: TestApp;
  let receiver: http.Server;
  let port: number;
  let received = 0;
  beforeAll(async () => {
    t = await startTestApp({ PROVIDER: 'sandbox' }); // BULK_CALLBACK_ALLOW_PRIVATE_NETWORKS left at its default
    receiver = http.createServer((_req, res) => {
      received++;
      res.writeHead(200).end();
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    port = (receiver.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await t?.close();
    if (receiver) await new Promise((resolve) => receiver.close(resolve));
  });

  it.each([
    ['a loopback address', () => `http://127.0.0.1:${port}/hook`, /127\.0\.0\.1 is not a public address/],
    ['the cloud metadata address', () => 'http://169.254.169.254/latest/meta-data', /169\.254\.169\.254 is not a public address/],
    ['IPv6 loopback', () => `http://[::1]:${port}/hook`, /::1 is not a public address/],
    ['localhost', () => `http://localhost:${port}/hook`, /localhost is this machine/],
    // IPv6 spellings of internal IPv4 addresses (issue 12, row 7): the embedded IPv4 is what is judged.
    ['IPv4-compatible ::127.0.0.1', () => `http://[::127.0.0.1]:${port}/hook`, /not global unicast/],
    ['IPv4-translated ::ffff:0:127.0.0.1', () => `http://[::ffff:0:127.0.0.1]:${port}/hook`, /127\.0\.0\.1, loopback/],
    ['NAT64 local-use 64:ff9b:1::7f00:1', () => `http://[64:ff9b:1::7f00:1]:${port}/hook`, /NAT64 local-use prefix/],
    ['NAT64 well-known 64:ff9b::a9fe:a9fe', () => 'http://[64:ff9b::a9fe:a9fe]/latest/meta-data', /169\.254\.169\.254, linkLocal/],
    ['6to4 2002:7f00:1::', () => `http://[2002:7f00:1::]:${port}/hook`, /127\.0\.0\.1, loopback/],
    ['Teredo of 127.0.0.1', () => `http://[2001:0:4136:e378:8000:63bf:80ff:fffe]:${port}/hook`, /127\.0\.0\.1, loopback/],
    // A zone id passes the URL syntax check but no URL parser takes it (row 4: it was a 500).
    ['an IPv6 zone id', () => 'http://[fe80::1%25eth0]/', /zone id/],
  ])('refuses %s with 400, and charges nothing', async (_name, url, message) => {
    const account = await createAccount(t, { credits: 100 });
    const res = await request(t.http).post('/api/v1/filter/bulk').set(account.auth).send({ phones: ['+447400123456'], callback_url: url() });
    expect(res.status).toBe(400);
    expect(res.body.error).toEqual({ code: 'INVALID_REQUEST', message: expect.stringMatching(message) });
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 100, byType: { TOPUP: 1 } });
  });

  it('applies the same rule to watchlist callbacks, on creation and on PATCH', async () => {
    const account = await createAccount(t, { credits: 100 });
    const refused = await request(t.http)
      .post('/api/v1/watchlists')
      .set(account.auth)
      .send({ phones: ['+447400123456'], interval: 'daily', callback_url: `http://127.0.0.1:${port}/hook` });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toEqual({ code: 'INVALID_REQUEST', message: expect.stringMatching(/127\.0\.0\.1 is not a public address/) });
    const created = await request(t.http).post('/api/v1/watchlists').set(account.auth).send({ phones: ['+447400123456'], interval: 'daily' }).expect(201);
    const patched = await request(t.http).patch(`/api/v1/watchlists/${created.body.id}`).set(account.auth).send({ callback_url: 'http://169.254.169.254/x' });
    expect(patched.status).toBe(400);
    expect(patched.body.error.message).toMatch(/169\.254\.169\.254 is not a public address/);
  });

  // Issue 35 #7: a public address's SSH or Redis port is not a receiver; 80 and 443 only, unless
  // CALLBACK_ALLOWED_PORTS says otherwise (docs/operations.md).
  it.each([
    ['bulk callback_url', (auth: Record<string, string>, url: string) => request(t.http).post('/api/v1/filter/bulk').set(auth).send({ phones: ['+447400123456'], callback_url: url })],
    ['watchlist callback_url', (auth: Record<string, string>, url: string) => request(t.http).post('/api/v1/watchlists').set(auth).send({ phones: ['+447400123456'], interval: 'daily', callback_url: url })],
    ['webhook_url', (auth: Record<string, string>, url: string) => request(t.http).patch('/api/v1/settings').set(auth).send({ webhook_url: url })],
  ])('refuses a %s on a port other than 80/443 of a public address with a clear 400, and charges nothing', async (field, send) => {
    const account = await createAccount(t, { credits: 100 });
    const name = field.split(' ').pop();
    for (const [url, port] of [['http://8.8.8.8:22/', 22], ['http://203.0.114.7:6379/hook', 6379], ['https://example.com:8443/hook', 8443]] as const) {
      const res = await send(account.auth, url);
      expect(res.status).toBe(400);
      expect(res.body.error).toEqual({
        code: 'INVALID_REQUEST',
        message: `${name} must point to a public address on an allowed port: port ${port} is not accepted (allowed: 80, 443; CALLBACK_ALLOWED_PORTS lists the ports a callback may use).`,
      });
    }
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 100, byType: { TOPUP: 1 } });
    const settings = await request(t.http).get('/api/v1/settings').set(account.auth).expect(200);
    expect(settings.body.webhook_url).toBeNull();
    // The same addresses on the web's ports are taken.
    expect((await send(account.auth, 'https://example.com:443/hook')).status).toBeLessThan(300);
  });

  it('never connects to a name that resolves to a private address, and says why', async () => {
    const client = t.app.get(CallbackClient);
    const delivery = client.post(`http://localhost:${port}/hook`, { id: 'x' }, ['secret']);
    await expect(delivery).rejects.toBeInstanceOf(CallbackFailedError);
    await expect(delivery).rejects.toThrow(/localhost is this machine/);
    // A name its spelling does not give away is checked on what it resolves to, at connection time:
    // "hooks.example.test" is resolved here as "localhost" would be (127.0.0.1, from /etc/hosts).
    const realLookup = dns.lookup;
    const lookup = jest
      .spyOn(dns, 'lookup')
      .mockImplementation(((hostname: string, options: dns.LookupAllOptions, callback: (...args: unknown[]) => void) =>
        realLookup(hostname === 'hooks.example.test' ? 'localhost' : hostname, options, callback)) as unknown as typeof dns.lookup);
    try {
      const disguised = client.post('http://hooks.example.test/hook', { id: 'x' }, ['secret']);
      await expect(disguised).rejects.toThrow(/not delivered: hooks\.example\.test resolves to no public address \(127\.0\.0\.1/);
      expect(lookup).toHaveBeenCalledWith('hooks.example.test', expect.anything(), expect.any(Function));
    } finally {
      lookup.mockRestore();
    }
    expect(received).toBe(0);
  });
});
