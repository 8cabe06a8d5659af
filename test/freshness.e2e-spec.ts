import request from 'supertest';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { createAccount, TestAccount } from './factories/accounts';
import { expectError } from './helpers/expect-error';
import { ledgerState } from './helpers/ledger';
import { startTestApp, TestApp } from './helpers/test-app';
import { hlrLookupsEnv } from './provider-helpers';

/** Plan-valid UK mobile numbers ending in 0005 (status alternates at each live lookup) and 0006 (operator alternates). */
let block = 10;
const alternatingNumber = (suffix: '0005' | '0006') => `+447400${String(block++).padStart(2, '0')}${suffix}`;

async function expectBalanceIsLedgerSum(t: TestApp, account: TestAccount, balance: number): Promise<void> {
  const state = await ledgerState(t.db, account.id);
  expect(state.balance).toBe(balance);
  expect(state.ledgerSum).toBe(balance);
}

describe('POST /api/v1/filter honours the Cache-Control request header (sandbox)', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp({ PROVIDER: 'sandbox' })));
  afterAll(() => t.close());

  const filter = (account: TestAccount, phone: string, cacheControl?: string) => {
    const call = request(t.http).post('/api/v1/filter').set(account.auth);
    if (cacheControl !== undefined) call.set('Cache-Control', cacheControl);
    return call.send({ phone });
  };

  it('without the header answers a repeated number from the cache: the 0005 number stays CONNECTED', async () => {
    const account = await createAccount(t, { credits: 100 });
    const phone = alternatingNumber('0005');
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await filter(account, phone).expect(200)).body.status);
    expect(statuses).toEqual(['CONNECTED', 'CONNECTED', 'CONNECTED']);
    await expectBalanceIsLedgerSum(t, account, 100 - 3 * 4);
  });

  it.each(['no-cache', 'max-age=0', 'no-store, max-age=0', 'NO-CACHE'])('with "%s" looks up live every time, at the same price', async (header) => {
    const account = await createAccount(t, { credits: 100 });
    const phone = alternatingNumber('0005');
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await filter(account, phone, header).expect(200)).body.status);
    expect(statuses).toEqual(['CONNECTED', 'ABSENT', 'CONNECTED', 'ABSENT']);
    await expectBalanceIsLedgerSum(t, account, 100 - 4 * 4);
  });

  it('lets the live answer refresh the cache: the next call without the header gets it', async () => {
    const account = await createAccount(t, { credits: 100 });
    const phone = alternatingNumber('0005');
    expect((await filter(account, phone).expect(200)).body).toMatchObject({ status: 'CONNECTED', valid: true });
    expect((await filter(account, phone, 'no-cache').expect(200)).body).toMatchObject({ status: 'ABSENT', valid: false });
    expect((await filter(account, phone).expect(200)).body).toMatchObject({ status: 'ABSENT', valid: false });
    await expectBalanceIsLedgerSum(t, account, 100 - 3 * 4);
  });

  // The age against N is counted on the clock in test/medium/provider/lookup-cache.medium-spec.ts (an answer older than N is looked up).
  it('with max-age=N uses a cached answer younger than N seconds', async () => {
    const account = await createAccount(t, { credits: 100 });
    const phone = alternatingNumber('0005');
    expect((await filter(account, phone).expect(200)).body.status).toBe('CONNECTED');
    expect((await filter(account, phone, 'max-age=3600').expect(200)).body.status).toBe('CONNECTED');
    expect((await filter(account, phone, 'max-age=0').expect(200)).body.status).toBe('ABSENT');
    expect((await filter(account, phone, 'max-age=3600').expect(200)).body.status).toBe('ABSENT');
    await expectBalanceIsLedgerSum(t, account, 100 - 4 * 4);
  });

  it('applies to every enabled check: a 0006 number shows its other operator on a live portability lookup', async () => {
    const account = await createAccount(t, { credits: 100 });
    await request(t.http).patch('/api/v1/settings').set(account.auth).send({ checks: { network_status: true, portability: true } }).expect(200);
    const phone = alternatingNumber('0006');
    const first = (await filter(account, phone).expect(200)).body;
    const cached = (await filter(account, phone).expect(200)).body;
    const live = (await filter(account, phone, 'no-cache').expect(200)).body;
    expect(cached).toEqual(first);
    expect(first).toMatchObject({ status: 'CONNECTED', is_ported: false });
    expect(live).toMatchObject({ status: 'CONNECTED', is_ported: true });
    expect(live.carrier).not.toBe(first.carrier);
    await expectBalanceIsLedgerSum(t, account, 100 - 3 * 6);
  });

  it('answers 400 for a malformed max-age and charges nothing', async () => {
    const account = await createAccount(t, { credits: 100 });
    const res = await filter(account, alternatingNumber('0005'), 'max-age=soon');
    expectError(res, 400, 'INVALID_REQUEST');
    expect(res.body.error.message).toMatch(/max-age/);
    await expectBalanceIsLedgerSum(t, account, 100);
  });
});

describe('Cache-Control with the hlr-lookups adapter and the upstream simulator', () => {
  let sim: UpstreamSimulator;
  let t: TestApp;
  beforeAll(async () => {
    sim = await startUpstreamSimulator({ port: 0, key: 'sim-key', secret: 'sim-secret' });
    t = await startTestApp(hlrLookupsEnv(sim.url));
  });
  afterAll(async () => {
    await t.close();
    await sim.close();
  });

  it('sends a no-cache call to the upstream every time, and a plain call only once', async () => {
    const account = await createAccount(t, { credits: 100 });
    const phone = alternatingNumber('0005');
    sim.resetStats();
    const plain = [];
    for (let i = 0; i < 2; i++) plain.push((await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone }).expect(200)).body.status);
    expect(sim.stats().requests).toBe(1);
    const live = [];
    for (let i = 0; i < 2; i++) {
      live.push((await request(t.http).post('/api/v1/filter').set(account.auth).set('Cache-Control', 'no-cache').send({ phone }).expect(200)).body.status);
    }
    expect(sim.stats().requests).toBe(3);
    expect(plain).toEqual(['CONNECTED', 'CONNECTED']);
    expect(live).toEqual(['ABSENT', 'CONNECTED']);
    await expectBalanceIsLedgerSum(t, account, 100 - 4 * 4);
  });
});
