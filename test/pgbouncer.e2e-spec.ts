import { DataSource } from 'typeorm';
import { chooseStatementMode, namedStatementsSurvive, preparedQuery } from '../src/database/prepared-query';
import { createAccount } from './factories/accounts';
import { ledgerState } from './helpers/ledger';
import { findPgBouncer, PgBouncer, PGBOUNCER_MISSING, startPgBouncer } from './helpers/pgbouncer';
import { TEST_NUMBERS } from './helpers/numbers';
import { startTestApp, TestApp } from './helpers/test-app';

const binary = findPgBouncer();
// The one accepted skip: a server npm cannot provide. One line says so, and what to install.
if (!binary) console.info(PGBOUNCER_MISSING);
const withPgBouncer = binary ? describe : describe.skip;

/** Calls through a listening app, `concurrency` at a time: the statuses and error codes seen. */
async function load(t: TestApp, auth: Record<string, string>, calls: number, concurrency: number): Promise<Map<string, number>> {
  const server = t.app.getHttpServer();
  if (!server.listening) await t.app.listen(0, '127.0.0.1');
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const seen = new Map<string, number>();
  let next = 0;
  const worker = async () => {
    while (next++ < calls) {
      const res = await fetch(`${base}/api/v1/filter`, {
        method: 'POST',
        headers: { ...auth, 'Content-Type': 'application/json' },
        body: JSON.stringify({ phone: TEST_NUMBERS.connected, source: 'pgbouncer-load' }),
      });
      const body = (await res.json()) as { error?: { code: string } };
      const key = `${res.status}${body.error ? ` ${body.error.code}` : ''}`;
      seen.set(key, (seen.get(key) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return seen;
}

/**
 * A real PgBouncer (1.18 on Debian 12: no max_prepared_statements) in transaction pooling mode between
 * the service and PostgreSQL, 3 server connections for the app's 20: named prepared statements meet
 * each other's sessions (42P05) or miss them (26000). The review saw 12.4% of cache-hit calls answer
 * 500 INTERNAL_ERROR there.
 */
withPgBouncer('behind PgBouncer in transaction mode', () => {
  let bouncer: PgBouncer;
  beforeAll(async () => {
    bouncer = await startPgBouncer(binary!, process.env.DATABASE_URL!, { poolSize: 3 });
  });
  afterAll(async () => {
    await bouncer?.stop();
  });

  it('start-up detection: named statements survive directly on PostgreSQL, not through the pooler', async () => {
    for (const [url, survives] of [
      [process.env.DATABASE_URL!, true],
      [bouncer.url, false],
    ] as const) {
      const db = new DataSource({ type: 'postgres', url, extra: { max: 4 } });
      await db.initialize();
      try {
        expect(await namedStatementsSurvive(db)).toBe(survives);
        expect(await chooseStatementMode(db, 'auto')).toBe(survives);
        expect(await chooseStatementMode(db, 'named')).toBe(true);
        expect(await chooseStatementMode(db, 'unnamed')).toBe(false);
      } finally {
        await db.destroy();
      }
    }
  });

  it('auto, when start-up saw nothing wrong: the first 42P05/26000 switches to unnamed, and that statement runs again unnamed', async () => {
    const db = new DataSource({ type: 'postgres', url: bouncer.url, extra: { max: 10 } });
    await db.initialize();
    try {
      expect(await chooseStatementMode(db, 'auto', async () => true)).toBe(true);
      const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => preparedQuery<{ n: number }>(db, 'test_switch', 'SELECT $1::int AS n', [i])));
      expect(answers.map((rows) => rows[0].n)).toEqual(Array.from({ length: 100 }, (_, i) => i));
      // Named from start to end (DATABASE_PREPARED_STATEMENTS=named), the same statements fail there.
      await chooseStatementMode(db, 'named');
      const named = await Promise.allSettled(Array.from({ length: 100 }, (_, i) => preparedQuery(db, 'test_switch_named', 'SELECT $1::int AS n', [i])));
      expect(named.some((outcome) => outcome.status === 'rejected')).toBe(true);
    } finally {
      await db.destroy();
    }
  });

  it('DATABASE_PREPARED_STATEMENTS=auto: 400 cache-hit calls over 20 connections, every one 200, the ledger exact', async () => {
    const t = await startTestApp({ DATABASE_URL: bouncer.url, DATABASE_PREPARED_STATEMENTS: 'auto', REDIS_URL: undefined, LOG_LEVEL: 'silent' });
    try {
      const account = await createAccount(t, { plan: 'enterprise', credits: 4 * 400 });
      const seen = await load(t, account.auth, 400, 20);
      expect(Object.fromEntries(seen)).toEqual({ 200: 400 });
      expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 0, ledgerSum: 0, unsettledCharges: 0 });
    } finally {
      await t.close();
    }
  });

  it('DATABASE_PREPARED_STATEMENTS=named there (misconfigured): the 42P05/26000 storm is answered 503 SERVICE_UNAVAILABLE, never 500, nothing charged for it', async () => {
    const t = await startTestApp({ DATABASE_URL: bouncer.url, DATABASE_PREPARED_STATEMENTS: 'named', REDIS_URL: undefined, LOG_LEVEL: 'silent' });
    try {
      // Four accounts at once: their charge statements run side by side on several pooled clients, so the
      // named statements meet server connections they were not prepared on (one account's charges are
      // written one statement at a time, and a CI run once reused one client throughout: no storm).
      const accounts = await Promise.all(Array.from({ length: 4 }, () => createAccount(t, { plan: 'enterprise', credits: 4 * 300 })));
      const seenByAccount = await Promise.all(accounts.map((account) => load(t, account.auth, 75, 5)));
      const statuses = seenByAccount.flatMap((seen) => [...seen.keys()]);
      expect(statuses.filter((status) => status !== '200' && status !== '503 SERVICE_UNAVAILABLE')).toEqual([]);
      expect(seenByAccount.reduce((sum, seen) => sum + (seen.get('503 SERVICE_UNAVAILABLE') ?? 0), 0)).toBeGreaterThan(0);
      // Each 200 charged once, each 503 nothing.
      for (const [i, account] of accounts.entries()) {
        const state = await ledgerState(t.db, account.id);
        expect(state).toMatchObject({ balance: 4 * 300 - 4 * (seenByAccount[i].get('200') ?? 0), unsettledCharges: 0 });
        expect(state.ledgerSum).toBe(state.balance);
      }
    } finally {
      await t.close();
    }
  });
});
