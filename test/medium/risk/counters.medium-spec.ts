import Redis from 'ioredis';
import { AdminModule } from '../../../src/admin/admin.module';
import { RetentionModule } from '../../../src/privacy/retention.module';
import { RetentionScheduler } from '../../../src/privacy/retention.scheduler';
import { CounterStore } from '../../../src/risk/counters/counter-store';
import { Ask, DAY_MS, HOUR_MS, RiskCounters } from '../../../src/risk/counters/risk-counters';
import { rangesOf } from '../../../src/risk/number-ranges';
import { RiskRecords } from '../../../src/risk/risk-records';
import { RiskStoreModule } from '../../../src/risk/risk-store.module';
import { createAccount } from '../../factories/accounts';
import { testRedisUrl } from '../../helpers/redis';
import { Medium, startMedium } from '../medium';

/**
 * The risk verdict's counters (src/risk/counters/) and feedback rows, in memory and in Redis alike:
 * sliding windows by the Clock (the test moves it), distinct numbers, neighbouring blocks, scopes kept
 * apart, verification rates with their grace, feedback, retention and erasure.
 */
describe.each([
  ['memory', { REDIS_URL: '' }],
  ['Redis', {}],
])('risk counters in %s', (kind, env) => {
  let m: Medium;
  let counters: RiskCounters;
  beforeAll(async () => {
    m = await startMedium({ imports: [AdminModule, RiskStoreModule, RetentionModule], env });
    counters = m.get(RiskCounters);
    expect(m.get(CounterStore).kind).toBe(kind === 'memory' ? 'memory' : 'redis');
  });
  afterAll(() => m.close());

  let accounts = 0;
  const newAccount = async () => (await createAccount(m, { credits: 10, name: `risk ${kind} ${++accounts}` })).id;
  const ask = (accountId: string, e164: string, extra: Partial<Ask> = {}) =>
    counters.observe({ accountId, source: 'web', e164, ranges: rangesOf(e164), country: 'GB', ip: null, at: m.clock.now(), graceSeconds: 600, ...extra });

  it('counts the distinct numbers of a range within the hour, then within the day only, then not at all', async () => {
    const a = await newAccount();
    expect((await ask(a, '+447400210011')).rangeHour).toBe(1);
    expect((await ask(a, '+447400215522')).rangeHour).toBe(2);
    const third = await ask(a, '+447400219933');
    expect({ hour: third.rangeHour, day: third.rangeDay }).toEqual({ hour: 3, day: 3 });
    // Asked again: still three distinct numbers.
    expect((await ask(a, '+447400210011')).rangeHour).toBe(3);
    await m.clock.advance(HOUR_MS + 1000);
    const later = await ask(a, '+447400218844');
    expect({ hour: later.rangeHour, day: later.rangeDay }).toEqual({ hour: 1, day: 4 });
    await m.clock.advance(DAY_MS);
    const nextDay = await ask(a, '+447400217755');
    expect({ hour: nextDay.rangeHour, day: nextDay.rangeDay }).toEqual({ hour: 1, day: 1 });
  });

  it('sees near-consecutive numbers across neighbouring blocks of ten, and not numbers further apart', async () => {
    const a = await newAccount();
    await ask(a, '+447400220019');
    await ask(a, '+447400220020');
    expect((await ask(a, '+447400220031')).nearbyHour).toBe(2); // its block (…3x) and the one before (…2x)
    expect((await ask(a, '+447400220021')).nearbyHour).toBe(4); // …1x, …2x and …3x
    expect((await ask(a, '+447400220099')).nearbyHour).toBe(1);
  });

  it('keeps accounts and sources apart, and counts the range across every account', async () => {
    const [a, b] = [await newAccount(), await newAccount()];
    await ask(a, '+447400230011', { source: 'web' });
    await ask(a, '+447400230022', { source: 'app' });
    const other = await ask(b, '+447400230033', { source: 'web' });
    expect({ own: other.rangeHour, deployment: other.deploymentRangeHour }).toEqual({ own: 1, deployment: 3 });
  });

  it('counts numbers and countries per IP, and countries per source', async () => {
    const a = await newAccount();
    await ask(a, '+447400240011', { ip: '203.0.113.9', country: 'GB' });
    await ask(a, '+4915212345678', { ip: '203.0.113.9', country: 'DE', ranges: rangesOf('+4915212345678') });
    const third = await ask(a, '+33612345678', { ip: '203.0.113.9', country: 'FR', ranges: rangesOf('+33612345678'), source: 'other' });
    expect({ numbers: third.ipNumbersHour, countries: third.ipCountriesHour, sourceCountries: third.sourceCountriesHour }).toEqual({ numbers: 3, countries: 3, sourceCountries: 1 });
    expect((await ask(a, '+447400240022')).ipNumbersHour).toBeNull();
  });

  it('counts an ask as not verified only once the grace has passed; feedback counts at once; the last feedback wins', async () => {
    const a = await newAccount();
    const numbers = ['+447400250011', '+447400251122', '+447400252233', '+447400253344', '+447400254455'];
    for (const e164 of numbers) await ask(a, e164, { source: 'rates' });
    expect((await ask(a, '+447400255566', { source: 'rates' })).verification.country).toEqual({ outcomes: 0, verified: 0 });
    expect(await counters.feedback(a, numbers[0], true, m.clock.now())).toEqual({ askedAt: expect.any(Number) });
    await counters.feedback(a, numbers[1], false, m.clock.now());
    await counters.feedback(a, numbers[2], false, m.clock.now());
    await counters.feedback(a, numbers[2], true, m.clock.now());
    expect((await ask(a, '+447400256677', { source: 'rates' })).verification.source).toEqual({ outcomes: 3, verified: 2 });
    await m.clock.advance(601_000);
    // The seven asks before now are past the grace: known outcomes, two of them verified.
    const later = await ask(a, '+447400257788', { source: 'rates' });
    expect(later.verification.source).toEqual({ outcomes: 7, verified: 2 });
    expect(later.graceSeconds).toBe(600);
  });

  it("counts the source's last hour apart: a good day behind it does not hide an hour nobody verified", async () => {
    const a = await newAccount();
    const morning = ['+447400260011', '+447400261122', '+447400262233', '+447400263344', '+447400264455'];
    for (const e164 of morning) await ask(a, e164, { source: 'hourly' });
    for (const e164 of morning) await counters.feedback(a, e164, true, m.clock.now());
    await m.clock.advance(2 * 3_600_000);
    for (const e164 of ['+447400265566', '+447400266677', '+447400267788', '+447400268899', '+447400269900']) await ask(a, e164, { source: 'hourly' });
    await m.clock.advance(601_000);
    const now = await ask(a, '+447400270011', { source: 'hourly' });
    expect(now.verification.source).toEqual({ outcomes: 10, verified: 5 });
    expect(now.verification.sourceHour).toEqual({ outcomes: 5, verified: 0 });
  });

  it('reads without recording what recording the same ask would answer (the number counted where its ask would be), and writes nothing', async () => {
    const a = await newAccount();
    const peek = (e164: string, extra: Partial<Ask> = {}) =>
      counters.observe({ accountId: a, source: 'peek', e164, ranges: rangesOf(e164), country: 'GB', ip: '203.0.113.70', at: m.clock.now(), graceSeconds: 600, ...extra }, { record: false });
    const record = (e164: string, extra: Partial<Ask> = {}) => ask(a, e164, { source: 'peek', ip: '203.0.113.70', ...extra });
    const earlier = '+447400310011';
    for (const e164 of [earlier, '+447400312222', '+447400313333']) await record(e164);
    await counters.feedback(a, '+447400312222', true, m.clock.now());
    await m.clock.advance(601_000); // the three asks are past the grace: known outcomes
    await record('+4915212340000', { ranges: rangesOf('+4915212340000'), country: 'DE' });

    // A number never asked: counted once in every window its ask would have fed.
    const fresh = '+447400314444';
    const read = await peek(fresh);
    expect({ range: read.rangeHour, day: read.rangeDay, deployment: read.deploymentRangeHour, numbers: read.sourceNumbersHour }).toEqual({ range: 4, day: 4, deployment: 4, numbers: 5 });
    expect(await peek(fresh)).toEqual(read); // nothing was written
    expect(await record(fresh)).toEqual(read);

    // A number asked before: not counted twice, and its earlier ask moves out of the past-the-grace outcomes as a new ask would move it.
    const again = await peek(earlier, { country: 'FR' });
    expect({ range: again.rangeHour, outcomes: again.verification.range.outcomes, countries: again.sourceCountriesHour }).toEqual({ range: 4, outcomes: 2, countries: 3 });
    expect(await record(earlier, { country: 'FR' })).toEqual(again);
  });

  it('holds ranges and keyed hashes, never a number, its 100-block or block of ten, nor an IP', async () => {
    if (kind === 'memory') return expect(m.get(CounterStore).kind).toBe('memory'); // Redis is what another process could read
    const a = await newAccount();
    const e164 = '+447400281234';
    await ask(a, e164, { source: 'privacy', ip: '198.51.100.77' });
    await counters.feedback(a, e164, true, m.clock.now());
    const redis = new Redis(testRedisUrl());
    try {
      const keys = await redis.keys(`${m.config.risk.redisPrefix}*`);
      const stored: string[] = [];
      for (const key of keys) {
        const type = await redis.type(key);
        if (type === 'zset') stored.push(...(await redis.zrange(key, 0, -1)));
        else if (type === 'hash') stored.push(...Object.entries(await redis.hgetall(key)).flat());
        else if (type === 'set') stored.push(...(await redis.smembers(key)));
        else if (type === 'string') stored.push((await redis.get(key)) ?? '');
      }
      const text = [...keys, ...stored].join('\n');
      expect(text).toContain('+44740028'); // its 10,000-number range, in clear
      for (const secret of ['447400281234', '4474002812', '44740028123', '7400281234', '198.51.100.77']) expect(text).not.toContain(secret);
    } finally {
      redis.disconnect();
    }
  });

  it("shortens the grace to three times the account's own 95th percentile delay, at least 60 s, once it has 20 verified feedbacks", async () => {
    const a = await newAccount();
    for (let i = 0; i < 20; i++) {
      const e164 = `+4474002600${String(i).padStart(2, '0')}`;
      await ask(a, e164, { source: 'habit' });
      await m.clock.advance(4000);
      await counters.feedback(a, e164, true, m.clock.now());
    }
    await ask(a, '+447400269901', { source: 'habit' }); // reads the habit
    expect((await ask(a, '+447400269902', { source: 'habit' })).graceSeconds).toBe(60);
  });

  it('takes feedback only for a verdict the account asked within 24 h, by the clock', async () => {
    const [a, b] = [await newAccount(), await newAccount()];
    await ask(a, '+447400270011');
    expect(await counters.feedback(b, '+447400270011', true, m.clock.now())).toBeUndefined();
    expect(await counters.feedback(a, '+447400270099', true, m.clock.now())).toBeUndefined();
    await m.clock.advance(DAY_MS - 1000);
    expect(await counters.feedback(a, '+447400270011', true, m.clock.now())).toBeDefined();
    await m.clock.advance(2000);
    expect(await counters.feedback(a, '+447400270011', true, m.clock.now())).toBeUndefined();
  });

  it('keeps feedback rows RETENTION_RISK_FEEDBACK_DAYS by the clock: the retention job deletes them after, not before', async () => {
    const a = await newAccount();
    await ask(a, '+447400280011');
    expect(await m.get(RiskRecords).feedback(a, '+447400280011', true)).toBe(true);
    const rows = async () => (await m.db.query(`SELECT count(*)::int AS n FROM risk_feedback WHERE account_id = $1`, [a]))[0].n;
    expect(await rows()).toBe(1);
    await m.clock.advance(m.config.retention.riskFeedbackDays * DAY_MS - HOUR_MS);
    expect((await m.jobs.run<Record<string, number>>(RetentionScheduler.JOB)).risk_feedback).toBe(0);
    expect(await rows()).toBe(1);
    await m.clock.advance(2 * HOUR_MS);
    expect((await m.jobs.run<Record<string, number>>(RetentionScheduler.JOB)).risk_feedback).toBeGreaterThanOrEqual(1);
    expect(await rows()).toBe(0);
  });

  it("erases a number: every account's feedback rows and asks go, with it from the counters; feedback is no longer taken", async () => {
    const [a, b] = [await newAccount(), await newAccount()];
    const records = m.get(RiskRecords);
    await ask(a, '+447400290011', { source: 'erase', ip: '203.0.113.50' });
    await ask(b, '+447400290011', { source: 'erase' });
    await ask(a, '+447400295522', { source: 'erase' });
    await records.feedback(a, '+447400290011', true);
    await records.feedback(b, '+447400290011', false);
    expect(await records.eraseNumber('+447400290011')).toEqual({ feedback: 2, asks: 2 });
    const rows = await m.db.query(`SELECT count(*)::int AS n FROM risk_feedback WHERE account_id = ANY($1::uuid[])`, [[a, b]]);
    expect(rows[0].n).toBe(0);
    expect(await records.feedback(a, '+447400290011', true)).toBe(false);
    const after = await ask(a, '+447400298833', { source: 'erase' });
    expect({ range: after.rangeHour, deployment: after.deploymentRangeHour }).toEqual({ range: 2, deployment: 2 });
    expect(await records.eraseNumber('+447400290011')).toEqual({ feedback: 0, asks: 0 });
  });
});
