import { AdminModule } from '../../../src/admin/admin.module';
import { CreditsService } from '../../../src/credits/credits.service';
import { SettingsService } from '../../../src/settings/settings.service';
import { verifyCallback } from '../../../src/webhooks/callback-signature';
import { DeliveryRound, EventsDispatcher } from '../../../src/webhooks/events.dispatcher';
import { EventsRepository } from '../../../src/webhooks/events.repository';
import { EventsService } from '../../../src/webhooks/events.service';
import { WebhooksModule } from '../../../src/webhooks/webhooks.module';
import { createAccount, TestAccount } from '../../factories/accounts';
import { CallbackReceiver, startReceiver } from '../../helpers/callback-receiver';
import { Medium, startMedium } from '../medium';

const RETRIES = 2;
const DELAY_SECONDS = 5;
const TIMEOUT_MS = 2000;
/** The lease of a claimed event: twice the receiver's allowance, plus 5 s (EventsDispatcher). */
const LEASE_MS = (Math.ceil((2 * TIMEOUT_MS) / 1000) + 5) * 1000;
const DAY_MS = 86_400_000;

/**
 * The outbox's delivery (webhooks/): each round is the dispatcher's own step, run by the test; the
 * backoff, the lease and the retention period are read from the clock, which the test moves. Account
 * events (balance.low, written by the charge statement) and callbacks to a callback_url (bulk jobs',
 * watchlists') go through the same rounds, retries and signature.
 */
describe('outbox delivery: rounds, backoff and give-up on the clock', () => {
  let m: Medium;
  let events: EventsService;
  const receivers: CallbackReceiver[] = [];
  beforeAll(async () => {
    m = await startMedium({
      imports: [AdminModule, WebhooksModule],
      env: {
        CALLBACK_RETRIES: String(RETRIES),
        CALLBACK_RETRY_DELAY_SECONDS: String(DELAY_SECONDS),
        CALLBACK_TIMEOUT_MS: String(TIMEOUT_MS),
        CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true', // the receivers listen on 127.0.0.1
      },
    });
    events = m.get(EventsService);
  });
  afterAll(async () => {
    await Promise.all(receivers.map((receiver) => receiver.close()));
    await m.close();
  });

  const deliver = () => m.jobs.run<DeliveryRound>(EventsDispatcher.JOB);
  const nothing: DeliveryRound = { delivered: 0, retrying: 0, gaveUp: 0, noWebhook: 0 };
  async function receiver(statuses: number[] = []): Promise<CallbackReceiver> {
    const started = await startReceiver(statuses);
    receivers.push(started);
    return started;
  }
  const listed = async (account: TestAccount) => (await events.list(account.id, 50, undefined)).events;

  /** An account whose next charge of 4 takes its balance from 8 to 4, below a threshold of 5: one balance.low in the outbox. */
  async function lowBalanceEvent(webhookUrl: string | null): Promise<{ account: TestAccount; secret: string }> {
    const account = await createAccount(m, { credits: 8 });
    const settings = await m.get(SettingsService).update(account.id, { low_balance_threshold: 5, webhook_url: webhookUrl });
    await m.get(CreditsService).charge(account.id, 4, { reference: `charge:outbox-${account.id}`, phone: '+44740012****', source: 'outbox-test' });
    await untilDue(account.id);
    return { account, secret: settings.webhook_secret };
  }

  /** Moves the clock to `at` (a time the database stamped, which runs on while the clock stands still). */
  const advanceTo = (at: number) => m.clock.advance(Math.max(0, at - m.clock.now()));

  /** The row is stamped due by the database's now(): the clock moves to that time (it started at the machine's time, earlier). */
  async function untilDue(accountId: string): Promise<void> {
    const [row]: Array<{ due: Date }> = await m.db.query(`SELECT max(next_attempt_at) AS due FROM account_events WHERE account_id = $1`, [accountId]);
    await advanceTo(row.due.getTime() + 1); // the database keeps microseconds, a Date milliseconds
  }

  const nextAttemptAt = async (accountId: string): Promise<number> => {
    const [row]: Array<{ next_attempt_at: Date }> = await m.db.query(`SELECT next_attempt_at FROM account_events WHERE account_id = $1`, [accountId]);
    return row.next_attempt_at.getTime();
  };

  it('is a job on the scheduler every EVENTS_POLL_INTERVAL_MS, with an hourly clean-up', () => {
    expect(m.jobs.everyMs(EventsDispatcher.JOB)).toBe(m.config.events.pollIntervalMs);
    expect(m.jobs.everyMs(EventsDispatcher.CLEANUP_JOB)).toBe(3_600_000);
  });

  it("delivers a due event once, signed with the clock's time, and marks it delivered at that time", async () => {
    const target = await receiver();
    const { account, secret } = await lowBalanceEvent(target.url);
    expect(await deliver()).toEqual({ ...nothing, delivered: 1 });
    expect(await deliver()).toEqual(nothing);
    expect(target.calls).toHaveLength(1);
    const [call] = target.calls;
    const seconds = Math.floor(m.clock.now() / 1000);
    expect(call.headers['x-signature-timestamp']).toBe(String(seconds));
    const headers = { signature: call.headers['x-signature'] as string, timestamp: call.headers['x-signature-timestamp'] as string };
    expect(verifyCallback(secret, headers, call.body, seconds)).toBe(true);
    const body = JSON.parse(call.body);
    expect(body).toEqual({ id: expect.any(String), type: 'balance.low', created_at: expect.any(String), data: { account_id: account.id, balance: 4, threshold: 5 } });
    expect(await listed(account)).toEqual([
      { id: body.id, type: 'balance.low', data: body.data, state: 'delivered', attempts: 1, last_error: null, created_at: body.created_at, delivered_at: m.clock.date().toISOString() },
    ]);
  });

  it('retries a failed delivery after the backoff by the clock, not before, and lists the attempts and the last error', async () => {
    const failing = await receiver([500]);
    const { account } = await lowBalanceEvent(failing.url);
    const failedAt = m.clock.now();
    expect(await deliver()).toEqual({ ...nothing, retrying: 1 });
    const [pending] = await listed(account);
    expect(pending).toMatchObject({ state: 'pending', attempts: 1, last_error: 'callback answered HTTP 500', delivered_at: null });
    // First retry after CALLBACK_RETRY_DELAY_SECONDS, plus up to a quarter at random.
    const retryAt = await nextAttemptAt(account.id);
    expect(retryAt - failedAt).toBeGreaterThanOrEqual(DELAY_SECONDS * 1000);
    expect(retryAt - failedAt).toBeLessThanOrEqual(DELAY_SECONDS * 1250);
    await m.clock.advance(retryAt - m.clock.now() - 1);
    expect(await deliver()).toEqual(nothing);
    await m.clock.advance(1);
    expect(await deliver()).toEqual({ ...nothing, delivered: 1 });
    const [delivered] = await listed(account);
    expect(delivered).toMatchObject({ type: 'balance.low', state: 'delivered', attempts: 2, last_error: null });
    expect(failing.calls.map((call) => JSON.parse(call.body).id)).toEqual([delivered.id, delivered.id]);
  });

  it('doubles the delay at each retry, gives up after CALLBACK_RETRIES (failed), and records no_webhook when no URL is set', async () => {
    const failing = await receiver([500, 500, 500, 500]);
    const { account } = await lowBalanceEvent(failing.url);
    const outcomes: DeliveryRound[] = [];
    for (let attempt = 1; attempt <= RETRIES + 1; attempt++) {
      const failedAt = m.clock.now();
      outcomes.push(await deliver());
      if (attempt > RETRIES) break;
      const waitMs = (await nextAttemptAt(account.id)) - failedAt;
      expect(waitMs).toBeGreaterThanOrEqual(DELAY_SECONDS * 1000 * 2 ** (attempt - 1));
      expect(waitMs).toBeLessThanOrEqual(DELAY_SECONDS * 1250 * 2 ** (attempt - 1));
      await m.clock.advance(waitMs);
    }
    expect(outcomes).toEqual([{ ...nothing, retrying: 1 }, { ...nothing, retrying: 1 }, { ...nothing, gaveUp: 1 }]);
    expect((await listed(account))[0]).toMatchObject({ state: 'failed', attempts: RETRIES + 1, last_error: 'callback answered HTTP 500' });
    await m.clock.advance(DAY_MS);
    expect(await deliver()).toEqual(nothing);
    expect(failing.calls).toHaveLength(RETRIES + 1);

    const { account: silent } = await lowBalanceEvent(null);
    expect(await deliver()).toEqual({ ...nothing, noWebhook: 1 });
    expect((await listed(silent))[0]).toMatchObject({ type: 'balance.low', state: 'no_webhook', data: { account_id: silent.id, balance: 4, threshold: 5 } });
  });

  it("gives a bulk job's and a watchlist's callbacks the same retries (CALLBACK_RETRIES) from the same outbox, with their own body", async () => {
    const refusing = await receiver(Array.from({ length: 10 }, () => 500));
    const account = await createAccount(m, { credits: 10 });
    await events.callback(account.id, 'bulk.completed', refusing.url, { id: 'job-1', status: 'completed', total: 1 }, 'bulk.completed:job-1');
    await events.callback(account.id, 'watchlist.paused', refusing.url, { id: 'ev-1', event: 'watchlist.paused', watchlist_id: 'wl-1' }, 'watchlist.paused:wl-1');
    await untilDue(account.id);
    const rounds: DeliveryRound[] = [await deliver()];
    for (let retry = 1; retry <= RETRIES; retry++) {
      await m.clock.advance(DELAY_SECONDS * 1250 * 2 ** (retry - 1));
      rounds.push(await deliver());
    }
    expect(rounds).toEqual([{ ...nothing, retrying: 2 }, { ...nothing, retrying: 2 }, { ...nothing, gaveUp: 2 }]);
    const rows: Array<{ type: string; state: string; attempts: number }> = await m.db.query(
      `SELECT type, state, attempts FROM account_events WHERE account_id = $1 ORDER BY type`,
      [account.id],
    );
    expect(rows).toEqual([
      { type: 'bulk.completed', state: 'failed', attempts: RETRIES + 1 },
      { type: 'watchlist.paused', state: 'failed', attempts: RETRIES + 1 },
    ]);
    const bodies = refusing.calls.map((call) => JSON.parse(call.body) as { id: string; watchlist_id?: string });
    expect(bodies.filter((body) => body.id === 'job-1')).toEqual(Array(RETRIES + 1).fill({ id: 'job-1', status: 'completed', total: 1 }));
    expect(bodies.filter((body) => body.watchlist_id === 'wl-1')).toHaveLength(RETRIES + 1);
    // Callbacks to a callback_url are not the account's events.
    expect(await listed(account)).toEqual([]);
  });

  it('leaves an event claimed by an instance that died to its lease, then delivers it', async () => {
    const target = await receiver();
    const { account } = await lowBalanceEvent(target.url);
    // Another instance claims it (an attempt counted, leased) and dies before delivering.
    expect(await m.get(EventsRepository).claimDue(20, LEASE_MS / 1000, m.clock.date())).toHaveLength(1);
    await m.clock.advance(LEASE_MS - 1);
    expect(await deliver()).toEqual(nothing);
    await m.clock.advance(1);
    expect(await deliver()).toEqual({ ...nothing, delivered: 1 });
    expect((await listed(account))[0]).toMatchObject({ state: 'delivered', attempts: 2 });
    expect(target.calls).toHaveLength(1);
  });

  // Last: it moves the clock 30 days on.
  it('lists the events of the last 30 days by the clock, and the clean-up deletes the older ones', async () => {
    const target = await receiver();
    const { account } = await lowBalanceEvent(target.url);
    expect(await deliver()).toEqual({ ...nothing, delivered: 1 });
    const [{ created_at: createdAt }]: Array<{ created_at: Date }> = await m.db.query(`SELECT created_at FROM account_events WHERE account_id = $1`, [account.id]);
    expect(m.clock.now()).toBeLessThan(createdAt.getTime() + 30 * DAY_MS - 60_000);
    await advanceTo(createdAt.getTime() + 30 * DAY_MS - 60_000);
    const kept = async () => {
      const [{ n }]: Array<{ n: number }> = await m.db.query(`SELECT count(*)::int AS n FROM account_events WHERE account_id = $1`, [account.id]);
      return n;
    };
    expect(await listed(account)).toHaveLength(1);
    await m.jobs.run(EventsDispatcher.CLEANUP_JOB);
    expect(await kept()).toBe(1);
    await m.clock.advance(120_000);
    expect(await listed(account)).toEqual([]);
    expect(await m.jobs.run(EventsDispatcher.CLEANUP_JOB)).toBeGreaterThanOrEqual(1); // with the earlier cases' events
    expect(await kept()).toBe(0);
  });
});
