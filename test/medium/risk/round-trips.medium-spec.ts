import Redis from 'ioredis';
import { Client } from 'pg';
import { AdminModule } from '../../../src/admin/admin.module';
import { CounterStore } from '../../../src/risk/counters/counter-store';
import { RiskModule } from '../../../src/risk/risk.module';
import { RiskService } from '../../../src/risk/risk.service';
import { createAccount, TestAccount } from '../../factories/accounts';
import { Medium, startMedium } from '../medium';

/** What one piece of work sent: PostgreSQL statements, Redis round trips (a pipeline or a lone command) and Redis commands. */
interface Sent {
  postgres: number;
  /**
   * Reads of the account's settings: the cache's refresh ahead (SettingsService), at most one an account
   * every 750 ms of the machine's time whatever the rate, so not a call's cost; on a busy machine it
   * falls inside a call now and then.
   */
  settingsReads: number;
  redisRoundTrips: number;
  redisCommands: number;
}

/**
 * Counts what the work sends, on every client of this process: each `pg` query is one statement; an
 * ioredis command that carries no pipeline position is a round trip of its own, a pipeline is one.
 */
async function sentBy(work: () => Promise<unknown>): Promise<Sent> {
  const sent: Sent = { postgres: 0, settingsReads: 0, redisRoundTrips: 0, redisCommands: 0 };
  const pgQuery = Client.prototype.query;
  const redisSend = Redis.prototype.sendCommand;
  const pipelineExec = (jest.requireActual('ioredis/built/Pipeline') as { default: { prototype: { exec: (...args: unknown[]) => unknown } } }).default.prototype;
  const exec = pipelineExec.exec;
  Client.prototype.query = function (this: Client, ...args: unknown[]) {
    const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string } | undefined)?.text;
    if (text?.includes('"account_settings"')) sent.settingsReads += 1;
    else sent.postgres += 1;
    return (pgQuery as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof pgQuery;
  Redis.prototype.sendCommand = function (this: Redis, command: { pipelineIndex?: number }, ...rest: unknown[]) {
    sent.redisCommands += 1;
    if (command.pipelineIndex === undefined) sent.redisRoundTrips += 1;
    return (redisSend as (...a: unknown[]) => unknown).call(this, command, ...rest);
  } as typeof redisSend;
  pipelineExec.exec = function (this: unknown, ...args: unknown[]) {
    sent.redisRoundTrips += 1;
    return exec.apply(this, args);
  };
  try {
    await work();
  } finally {
    Client.prototype.query = pgQuery;
    Redis.prototype.sendCommand = redisSend;
    pipelineExec.exec = exec;
  }
  return sent;
}

/**
 * What a risk verdict costs in round trips (docs/sms-pumping.md "What it costs"): a count that no load
 * blurs, pinned so that the cost cannot creep back unnoticed. The route adds the plan limit's one
 * script call (as for /filter); here is RiskService's own work.
 */
describe('the round trips of a risk verdict (counters in Redis)', () => {
  let m: Medium;
  let risk: RiskService;
  let account: TestAccount;
  beforeAll(async () => {
    m = await startMedium({ imports: [AdminModule, RiskModule] });
    expect(m.get(CounterStore).kind).toBe('redis');
    risk = m.get(RiskService);
    account = await createAccount(m, { credits: 100 });
  });
  afterAll(() => m.close());

  const ask = (phone: string, ip?: string) =>
    risk.verdict({ accountId: account.id, keyId: 'medium-test', plan: { name: 'enterprise', limit: 1_000_000, windowSeconds: 1 } }, { phone, ip });

  it('takes two PostgreSQL statements (charge, settle) and two Redis round trips (the counters in one script call, the known answers in one pipeline)', async () => {
    // The first call reads the account's settings and loads the counters' script into Redis: not the steady cost.
    await ask('+447400300001');
    for (const [phone, ip] of [['+447400300002', undefined], ['+447400300003', '203.0.113.9'], ['+37120000017', '2001:db8::1']] as const) {
      let answer: unknown;
      const sent = await sentBy(async () => (answer = JSON.parse(await ask(phone, ip).then((a) => a.body))));
      expect(answer).toEqual(expect.objectContaining({ score: expect.any(Number), recommendation: expect.stringMatching(/^(allow|flag|block)$/) }));
      // The counters' script is one command however many windows it counts (an IP adds eight); the
      // known answers are GET and PTTL of each of the three records that hold a fact.
      expect(sent).toEqual({ postgres: 2, settingsReads: expect.any(Number), redisRoundTrips: 2, redisCommands: 1 + 6 });
      expect(sent.settingsReads).toBeLessThanOrEqual(1);
    }
  });
});
