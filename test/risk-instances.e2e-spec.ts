import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { createAccount, TestAccount } from './factories/accounts';
import { testRedisUrl } from './helpers/redis';
import { startTestApp, TestApp } from './helpers/test-app';

/**
 * The risk counters across instances (docs/sms-pumping.md "Several instances"): two app instances on
 * one database and one Redis see one attack as one. The same attack sent to one instance, and split
 * between two (every other call), is caught at the same call.
 */
describe('POST /api/v1/risk on two instances sharing Redis', () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    // A request's Redis allowance a loaded machine cannot use up before the counters are asked (it only
    // bounds how long a call waits on a Redis that does not answer, which is not this file's subject).
    const env = { PROVIDER: 'sandbox', REDIS_URL: testRedisUrl(), RISK_REDIS_PREFIX: `pf:test:${randomBytes(6).toString('hex')}:risk:`, REDIS_CALL_BUDGET_MS: '10000' };
    [a, b] = await Promise.all([startTestApp(env), startTestApp(env)]);
  });
  afterAll(async () => Promise.all([a?.close(), b?.close()]));

  /** The recommendations of `phones`, asked in turn of `instances` (the first phone of the first, and so on). */
  async function attack(account: TestAccount, phones: string[], instances: TestApp[]): Promise<string[]> {
    const answers: string[] = [];
    for (const [index, phone] of phones.entries()) {
      const res = await request(instances[index % instances.length].http).post('/api/v1/risk').set(account.auth).send({ phone, source: 'form' }).expect(200);
      answers.push(res.body.recommendation);
    }
    return answers;
  }

  /** Six consecutive numbers of their own range. */
  const run = (range: string) => Array.from({ length: 6 }, (_, i) => `+447400${range}001${i}`);
  /** Numbers of one 10,000-number range, far apart (no run): range velocity alone. */
  const spread = (range: string) => ['1111', '3333', '5555', '7777', '9999', '2222'].map((tail) => `+447400${range}${tail}`);

  it('catches a run of near-consecutive numbers split across both at the same call as on one', async () => {
    const [one, two] = [await createAccount(a, { credits: 100 }), await createAccount(a, { credits: 100 })];
    const onOne = await attack(one, run('36'), [a]);
    const onTwo = await attack(two, run('37'), [a, b]);
    expect(onOne.indexOf('block')).toBe(2);
    expect(onTwo).toEqual(onOne);
  });

  it('catches range velocity split across both at the same call as on one', async () => {
    const [one, two] = [await createAccount(a, { credits: 100 }), await createAccount(a, { credits: 100 })];
    const onOne = await attack(one, spread('41'), [a]);
    const onTwo = await attack(two, spread('42'), [b, a]);
    expect(onOne.indexOf('flag')).toBe(3);
    expect(onTwo).toEqual(onOne);
  });

  it('takes feedback on the other instance than the verdict', async () => {
    const account = await createAccount(a, { credits: 100 });
    await request(a.http).post('/api/v1/risk').set(account.auth).send({ phone: '+447400350011' }).expect(200);
    await request(b.http).post('/api/v1/risk/feedback').set(account.auth).send({ phone: '+447400350011', verified: true }).expect(200);
  });
});
