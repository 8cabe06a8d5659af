import { AdminModule } from '../../../src/admin/admin.module';
import { ErasureService } from '../../../src/admin/erasure.service';
import { Medium, startMedium } from '../medium';

/** The stores of the data map that can hold a number (docs/privacy.md): none may be read whole by an erasure. */
const STORES = ['bulk_entries', 'watchlist_entries', 'watchlist_changes', 'watchlists', 'idempotency_keys', 'account_events', 'ledger_entries', 'risk_feedback'];

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function nodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodes)];
}

/**
 * Issue 38 point 2: an erasure finds a number through an index in every store, one lookup per store,
 * not by reading each row with a regular expression (16.7-19.5 s on a grown database, growing with
 * every row). Every statement an erasure sends is explained with sequential scans priced out
 * (`enable_seqscan = off`): a statement that an index can serve then shows only index scans, and one
 * that no index can serve (the old regular expressions) still shows a Seq Scan. The grown-database
 * timing is `npm run bench:grow` (docs/benchmark.md).
 */
describe('erasure plans: each store is reached through an index', () => {
  let m: Medium;
  beforeAll(async () => {
    m = await startMedium({ imports: [AdminModule], env: { PROVIDER: 'sandbox' } });
  });
  afterAll(() => m?.close());

  it('no statement of an erasure reads a store of the data map with a sequential scan', async () => {
    // What TypeORM sends, whichever repository or transaction sends it.
    const probe = m.db.createQueryRunner();
    const runnerClass = Object.getPrototypeOf(probe) as { query: (query: string, parameters?: unknown[]) => Promise<unknown> };
    await probe.release();
    const spy = jest.spyOn(runnerClass, 'query');
    let calls: Array<[string, unknown[]?]> = [];
    try {
      await m.get(ErasureService).erase('+447400170201');
      calls = [...spy.mock.calls];
    } finally {
      spy.mockRestore();
    }
    const statements = calls
      .map(([query, parameters]) => ({ query, parameters: parameters ?? [] }))
      .filter(({ query }) => STORES.some((store) => query.includes(store)));
    // The stores reached: bulk entries, watchlists (entries, changes, creation answers), keys, the outbox, the ledger, risk feedback.
    expect(STORES.filter((store) => !statements.some(({ query }) => query.includes(store)))).toEqual([]);

    const runner = m.db.createQueryRunner();
    const seqScans: string[] = [];
    const indexes = new Set<string>();
    try {
      await runner.query('SET enable_seqscan = off');
      for (const { query, parameters } of statements) {
        const [{ 'QUERY PLAN': [plan] }] = await runner.query(`EXPLAIN (FORMAT JSON) ${query}`, parameters);
        for (const node of nodes((plan as { Plan: PlanNode }).Plan)) {
          // A bitmap's index scans name their index only (the heap scan above them names the table).
          if (node['Index Name']) indexes.add(node['Index Name']);
          if (node['Node Type'] === 'Seq Scan' && STORES.includes(node['Relation Name']!)) seqScans.push(`${node['Relation Name']}: ${query.replace(/\s+/g, ' ').slice(0, 120)}`);
        }
      }
    } finally {
      await runner.query('RESET enable_seqscan');
      await runner.release();
    }
    expect(seqScans).toEqual([]);
    // The indexes that serve them (the keyed hashes' and the normalised numbers' of migration ErasureByKeyedHash among them).
    expect([...indexes]).toEqual(
      expect.arrayContaining([
        'bulk_entries_phone_hash_idx',
        'watchlist_entries_phone_idx',
        'watchlist_changes_phone_idx',
        'watchlists_creation_answer_hashes_idx',
        'account_events_phone_hashes_idx',
        'ledger_entries_unmasked_phone_value_idx',
      ]),
    );
  });
});
