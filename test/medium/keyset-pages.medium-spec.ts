import { AdminModule } from '../../src/admin/admin.module';
import { AdminAuditRepository } from '../../src/audit/audit.repository';
import { BulkJobsRepository } from '../../src/bulk/bulk-jobs.repository';
import { BulkModule } from '../../src/bulk/bulk.module';
import { CreditsRepository } from '../../src/credits/credits.repository';
import { EventsRepository } from '../../src/webhooks/events.repository';
import { WatchlistsRepository } from '../../src/watchlists/watchlists.repository';
import { WatchlistsModule } from '../../src/watchlists/watchlists.module';
import { Medium, startMedium } from './medium';

/** The owner's rows: the oldest, and most of every table, so that PostgreSQL's statistics favour a walk of the primary key. */
const OWNER_ROWS = 20_000;
/** Newer rows of other owners, spread over OTHERS owners: what the wrong plan reads and discards first. */
const OTHER_ROWS = 2_000;
const OTHERS = 200;
const OWNER = '00000000-0000-4000-8000-000000000001';
const other = (n: string) => `('10000000-0000-4000-8000-' || lpad((1 + ${n} % ${OTHERS})::text, 12, '0'))::uuid`;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function nodesOf(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodesOf)];
}

/**
 * Issue 38: every keyset page of the service reads its owner's rows through an index whose first column
 * is the owner, in the page's order, whatever the other owners hold. The finding: GET
 * /api/v1/watchlists/{id} on a 100,000-entry list walked the whole entries table backwards by id,
 * reading and discarding 10,056 newer entries of other lists. Here each page's own query (captured as
 * its repository sends it) is explained, with its parameters, on ANALYZEd tables where that walk is the
 * cheaper guess: the owner holds most rows, and they are the oldest.
 */
describe('keyset pages start at their owner', () => {
  let m: Medium;
  let ownerList: string;
  let ownerJob: string;
  beforeAll(async () => {
    m = await startMedium({ imports: [WatchlistsModule, BulkModule, AdminModule] });
    // Raw SQL, not the factories: tens of thousands of rows in a few statements (no service would write them this fast).
    await m.db.query(`INSERT INTO accounts (id, name, plan) VALUES ($1, 'owner', 'enterprise')`, [OWNER]);
    await m.db.query(`INSERT INTO accounts (id, name, plan) SELECT ${other('g')}, 'other ' || g, 'enterprise' FROM generate_series(0, ${OTHERS - 1}) g`);
    const seed = async (table: string, columns: string, ownerValues: string, otherValues: string) => {
      await m.db.query(`INSERT INTO ${table} (${columns}) SELECT ${ownerValues} FROM generate_series(1, ${OWNER_ROWS}) g`);
      await m.db.query(`INSERT INTO ${table} (${columns}) SELECT ${otherValues} FROM generate_series(1, ${OTHER_ROWS}) g`);
    };
    const owner = `'${OWNER}'::uuid`;
    await seed('ledger_entries', 'account_id, type, amount, balance_after, reference', `${owner}, 'TOPUP', 1, g, 'seed:o:' || g`, `${other('g')}, 'TOPUP', 1, g, 'seed:x:' || g`);
    await seed('account_events', 'account_id, type, payload', `${owner}, 'seed', '{}'`, `${other('g')}, 'seed', '{}'`);
    const job = `gen_random_uuid(), 1, 0, 4, 0, '{}', 1, 'seed', '{"answer":[],"answered_by":[]}'`;
    await seed('bulk_jobs', 'account_id, id, total, charged_entries, cost_per_entry, cost, checks, chunks, source, csv_layout', `${owner}, ${job}`, `${other('g')}, ${job}`);
    const watchlist = `'daily', 'seed', now()`;
    await seed('watchlists', 'account_id, id, interval, schedule_group, next_check_at', `${owner}, gen_random_uuid(), ${watchlist}`, `${other('g')}, gen_random_uuid(), ${watchlist}`);
    // The watchlist whose entries are paged: the owner's oldest one; the others' entries go to 199 lists of other owners.
    [{ id: ownerList }] = await m.db.query(`SELECT id FROM watchlists WHERE account_id = $1 ORDER BY seq LIMIT 1`, [OWNER]);
    const lists: Array<{ id: string }> = await m.db.query(`SELECT id FROM watchlists WHERE account_id <> $1 ORDER BY seq LIMIT 199`, [OWNER]);
    await m.db.query(
      `INSERT INTO watchlist_entries (watchlist_id, phone) SELECT $1, '+4474' || lpad(g::text, 8, '0') FROM generate_series(1, ${OWNER_ROWS}) g`,
      [ownerList],
    );
    await m.db.query(
      `INSERT INTO watchlist_entries (watchlist_id, phone) SELECT ($1::uuid[])[1 + g % 199], '+4475' || lpad(g::text, 8, '0') FROM generate_series(1, ${OTHER_ROWS}) g`,
      [lists.map((list) => list.id)],
    );
    await m.db.query(`INSERT INTO watchlist_changes (watchlist_id, entry_id, round, phone, field, before, after)
                      SELECT watchlist_id, id, 1, phone, 'status', '"CONNECTED"', '"ABSENT"' FROM watchlist_entries ORDER BY id`);
    await seed('admin_audit', 'actor, action, target_type, target_id', `'seed', 'seed', 'account', '${OWNER}'`, `'seed', 'seed', 'account', 'other ' || (g % ${OTHERS})`);
    // A bulk job's entries: the owner's job among jobs of others.
    [{ id: ownerJob }] = await m.db.query(`SELECT id FROM bulk_jobs WHERE account_id = $1 ORDER BY seq LIMIT 1`, [OWNER]);
    await m.db.query(`INSERT INTO bulk_entries (job_id, idx, phone, chunk) SELECT $1, g, '+4474' || lpad(g::text, 8, '0'), 0 FROM generate_series(0, 999) g`, [ownerJob]);
    await m.db.query(
      `INSERT INTO bulk_entries (job_id, idx, phone, chunk) SELECT j.id, g, '+4475' || lpad(g::text, 8, '0'), 0
         FROM (SELECT id FROM bulk_jobs WHERE account_id <> $1 ORDER BY seq DESC LIMIT 20) j, generate_series(0, 999) g`,
      [OWNER],
    );
    await m.db.query(`ANALYZE`);
  }, 180_000);
  afterAll(() => m?.close());

  /** The first statement `read` sends (its SQL and parameters), as its repository sends it. */
  async function queryOf(read: () => Promise<unknown>): Promise<{ sql: string; parameters: unknown[] }> {
    const spy = jest.spyOn(m.db, 'query');
    try {
      await read();
      const [sql, parameters] = spy.mock.calls[0] as [string, unknown[]];
      return { sql, parameters: parameters ?? [] };
    } finally {
      spy.mockRestore();
    }
  }

  /** The first column of each index of the table. */
  async function firstColumns(table: string): Promise<Map<string, string>> {
    const rows: Array<{ index: string; first: string }> = await m.db.query(
      `SELECT c.relname AS index, a.attname AS first FROM pg_index i
         JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid
         JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
        WHERE t.relname = $1`,
      [table],
    );
    return new Map(rows.map((row) => [row.index, row.first]));
  }

  /** How PostgreSQL reads `table` in the plan of the page's query: each scan of it, with the first column of its index. */
  async function readsOf(query: { sql: string; parameters: unknown[] }, table: string): Promise<{ scans: string[]; sorted: boolean }> {
    const [{ 'QUERY PLAN': [{ Plan: plan }] }] = (await m.db.query(`EXPLAIN (FORMAT JSON) ${query.sql}`, query.parameters)) as Array<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>;
    const indexes = await firstColumns(table);
    const nodes = nodesOf(plan);
    const scans = nodes
      .filter((node) => node['Relation Name'] === table || (node['Node Type'] === 'Bitmap Index Scan' && indexes.has(node['Index Name']!)))
      .filter((node) => node['Node Type'] !== 'Bitmap Heap Scan')
      .map((node) => (node['Index Name'] ? `${node['Node Type']} on an index of (${indexes.get(node['Index Name'])}, …)` : node['Node Type']));
    return { scans, sorted: nodes.some((node) => /Sort/.test(node['Node Type'])) };
  }

  const startsAt = (owner: string) => ({ scans: [expect.stringMatching(new RegExp(`^(Index Scan|Index Only Scan|Bitmap Index Scan) on an index of \\(${owner}, …\\)$`))], sorted: false });

  it("a watchlist's entries (GET /api/v1/watchlists/{id}), first page and next", async () => {
    const repository = m.get(WatchlistsRepository);
    expect(await readsOf(await queryOf(() => repository.entries(ownerList, 4, undefined)), 'watchlist_entries')).toEqual(startsAt('watchlist_id'));
    expect(await readsOf(await queryOf(() => repository.entries(ownerList, 101, '10000')), 'watchlist_entries')).toEqual(startsAt('watchlist_id'));
    // And it reads the page, newest first.
    const page = await repository.entries(ownerList, 3, undefined);
    expect(page.map((entry) => entry.phone)).toEqual(['+447400020000', '+447400019999', '+447400019998']);
  });

  it("a watchlist's changes (GET /api/v1/watchlists/{id}/changes)", async () => {
    const repository = m.get(WatchlistsRepository);
    expect(await readsOf(await queryOf(() => repository.changes(ownerList, undefined, 101, undefined)), 'watchlist_changes')).toEqual(startsAt('watchlist_id'));
    expect(await readsOf(await queryOf(() => repository.changes(ownerList, new Date(0), 101, '10000')), 'watchlist_changes')).toEqual(startsAt('watchlist_id'));
  });

  it("an account's watchlists (GET /api/v1/watchlists)", async () => {
    expect(await readsOf(await queryOf(() => m.get(WatchlistsRepository).page(OWNER, 21, undefined)), 'watchlists')).toEqual(startsAt('account_id'));
  });

  it("an account's bulk jobs (GET /api/v1/filter/bulk), and a job's entries", async () => {
    const repository = m.get(BulkJobsRepository);
    expect(await readsOf(await queryOf(() => repository.page(OWNER, 21, undefined)), 'bulk_jobs')).toEqual(startsAt('account_id'));
    expect(await readsOf(await queryOf(() => repository.page(OWNER, 21, '10000')), 'bulk_jobs')).toEqual(startsAt('account_id'));
    // A job's entries are read whole, in input order (at most 1,000): sorted or not, from the job's part of its index.
    expect(await readsOf(await queryOf(() => repository.entries(ownerJob, false)), 'bulk_entries')).toEqual({ ...startsAt('job_id'), sorted: expect.any(Boolean) });
  });

  it("an account's ledger (GET /api/v1/usage)", async () => {
    const repository = m.get(CreditsRepository);
    expect(await readsOf(await queryOf(() => repository.page(OWNER, 51, undefined)), 'ledger_entries')).toEqual(startsAt('account_id'));
    expect(await readsOf(await queryOf(() => repository.page(OWNER, 51, '10000')), 'ledger_entries')).toEqual(startsAt('account_id'));
  });

  it("an account's events (GET /api/v1/events)", async () => {
    const since = m.clock.inMs(-30 * 24 * 3600 * 1000);
    expect(await readsOf(await queryOf(() => m.get(EventsRepository).page(OWNER, 51, undefined, since)), 'account_events')).toEqual(startsAt('account_id'));
  });

  it("a target's audit trail (GET /admin/v1/audit?target_id=)", async () => {
    expect(await readsOf(await queryOf(() => m.get(AdminAuditRepository).listNewestFirst(51, undefined, OWNER)), 'admin_audit')).toEqual(startsAt('target_id'));
  });
});
