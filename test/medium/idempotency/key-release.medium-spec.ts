import { Client } from 'pg';
import { AdminModule } from '../../../src/admin/admin.module';
import { IdempotencyModule } from '../../../src/idempotency/idempotency.module';
import { IdempotencyRepository } from '../../../src/idempotency/idempotency.repository';
import { createAccount } from '../../factories/accounts';
import { eventually } from '../../helpers/eventually';
import { Medium, startMedium } from '../medium';

/** Releasing the key of a failed call against a charge that names it, committed meanwhile (moved from test/privacy-retention.e2e-spec.ts). */
describe('an Idempotency-Key released by a failed call', () => {
  let m: Medium;
  beforeAll(async () => {
    m = await startMedium({ imports: [AdminModule, IdempotencyModule] });
  });
  afterAll(() => m.close());

  it('is freed only if no charge names it, even one committed while it frees it (the FK no longer refuses)', async () => {
    const account = await createAccount(m, { credits: 100 });
    const keys = m.get(IdempotencyRepository);
    const key = (await keys.claim(account.id, 'racing-release', 'f'.repeat(64), null))!;
    // A charge naming the key, in a transaction still open: it holds a share lock on the key's row.
    const charging = new Client({ connectionString: m.config.database.url });
    await charging.connect();
    try {
      await charging.query('BEGIN');
      await charging.query(
        `INSERT INTO ledger_entries (account_id, type, amount, balance_after, reference, idempotency_key_id) VALUES ($1, 'CHARGE', 0, 100, $2, $3)`,
        [account.id, `race:${key.id}`, key.id],
      );
      const releasing = keys.release(key);
      // The release waits for the charge's lock on the key's row (seen in pg_stat_activity), and only then does the charge commit.
      const waiting = await eventually(
        async () => {
          const rows: Array<{ n: number }> = await m.db.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FROM idempotency_keys%FOR UPDATE%'`,
          );
          return rows[0].n;
        },
        (n) => n === 1,
        30_000,
      );
      expect(waiting).toBe(1);
      await charging.query('COMMIT');
      await releasing;
    } finally {
      await charging.end();
    }
    expect(await m.db.query(`SELECT count(*)::int AS n FROM idempotency_keys WHERE id = $1`, [key.id])).toEqual([{ n: 1 }]);
    expect(await m.db.query(`SELECT idempotency_key_id FROM ledger_entries WHERE reference = $1`, [`race:${key.id}`])).toEqual([{ idempotency_key_id: key.id }]);
  });
});
