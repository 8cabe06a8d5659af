import type { Call } from './load';
import type { OwnPostgres } from './own-postgres';

/** What the ledger holds for the calls of one `source`. */
interface Charges {
  charges: number;
  refunds: number;
  /** Charges without a refund. */
  kept: number;
}

export interface Violations {
  balanceNotLedgerSum: string[];
  negativeBalance: string[];
  unsettledCharges: number;
  doubleRefunds: string[];
  /** Keyed calls with more than one kept charge. */
  keyChargedTwice: string[];
  /** Calls answered 200 without exactly one kept charge (none may be missing for a `tolerated` call, never two). */
  answeredNotCharged: string[];
  /** Calls answered 503 (and never 200) that kept a charge, or upstream failures (keyed or not) not refunded exactly once. */
  failedNotRefunded: string[];
  /** Bulk jobs not completed, or not charged exactly cost per entry × answered entries. */
  bulkNotExact: string[];
}

export interface Checked {
  violations: Violations;
  /** Tolerated calls answered 200 that kept no charge: the documented loss, always in the customer's favour. */
  lostInTheCustomersFavour: string[];
}

/**
 * The money invariants, checked in SQL over the whole database and over the calls the test made.
 * `tolerated(call)`: a call whose charge the fault may have lost or refunded (README: what holds under
 * which fault), kept 0 times rather than once; never twice.
 */
export async function checkInvariants(pg: OwnPostgres, calls: Call[], tolerated: (call: Call) => boolean = () => false): Promise<Checked> {
  const ledger = await chargesBySource(pg);
  const none: Charges = { charges: 0, refunds: 0, kept: 0 };
  const violations: Violations = {
    balanceNotLedgerSum: (
      await pg.query<{ id: string }>(
        `SELECT a.id FROM accounts a WHERE a.balance <> (SELECT COALESCE(SUM(amount), 0) FROM ledger_entries l WHERE l.account_id = a.id)`,
      )
    ).map((row) => row.id),
    negativeBalance: (await pg.query<{ id: string }>(`SELECT id FROM accounts WHERE balance < 0`)).map((row) => row.id),
    unsettledCharges: Number((await pg.query<{ n: string }>(`SELECT count(*) AS n FROM ledger_entries WHERE type = 'CHARGE' AND settled_at IS NULL`))[0].n),
    doubleRefunds: (
      await pg.query<{ refund_of: string }>(`SELECT refund_of FROM ledger_entries WHERE type = 'REFUND' GROUP BY refund_of HAVING count(*) > 1`)
    ).map((row) => row.refund_of),
    keyChargedTwice: [],
    answeredNotCharged: [],
    failedNotRefunded: [],
    bulkNotExact: await bulkNotExact(pg),
  };
  const lostInTheCustomersFavour: string[] = [];
  for (const call of calls) {
    const charges = ledger.get(call.source) ?? none;
    const answered = call.attempts.some((attempt) => attempt.status === 200);
    const describe = `${call.source} ${JSON.stringify(charges)} ${JSON.stringify(call.attempts.map((a) => `${a.instance}:${a.status}${a.code ? `:${a.code}` : ''} sent ${a.sentAt} answered ${a.at}`))}`;
    const lossTolerated = charges.kept === 0 && tolerated(call);
    if (lossTolerated && answered) lostInTheCustomersFavour.push(describe);
    if (call.key && charges.kept > 1) violations.keyChargedTwice.push(describe);
    if (answered && charges.kept !== 1 && !lossTolerated) violations.answeredNotCharged.push(describe);
    const upstreamFailed = call.attempts.some((attempt) => attempt.code === 'PROVIDER_UNAVAILABLE');
    const failedOnly = !answered && call.attempts.some((attempt) => attempt.status === 503);
    if (failedOnly && charges.kept !== 0) violations.failedNotRefunded.push(describe);
    else if (!call.key && upstreamFailed && (charges.charges !== 1 || charges.refunds !== 1) && !lossTolerated) violations.failedNotRefunded.push(describe);
    // A keyed call may be charged again after a refunded failure: every failed attempt refunded (once:
    // doubleRefunds), and exactly the answered one kept.
    else if (call.key && upstreamFailed && (charges.refunds < 1 || charges.kept !== (answered ? 1 : 0)) && !lossTolerated) violations.failedNotRefunded.push(describe);
  }
  return { violations, lostInTheCustomersFavour };
}

/** The invariants that must hold whatever the fault: every list empty, nothing unsettled. */
export const HOLDS: Violations = {
  balanceNotLedgerSum: [],
  negativeBalance: [],
  unsettledCharges: 0,
  doubleRefunds: [],
  keyChargedTwice: [],
  answeredNotCharged: [],
  failedNotRefunded: [],
  bulkNotExact: [],
};

async function chargesBySource(pg: OwnPostgres): Promise<Map<string, Charges>> {
  const rows = await pg.query<{ source: string; charges: string; refunds: string; kept: string }>(
    `SELECT c.source, count(*) AS charges, count(r.id) AS refunds, count(*) FILTER (WHERE r.id IS NULL) AS kept
       FROM ledger_entries c LEFT JOIN ledger_entries r ON r.refund_of = c.id
      WHERE c.type = 'CHARGE' AND c.source IS NOT NULL
      GROUP BY c.source`,
  );
  return new Map(rows.map((row) => [row.source, { charges: Number(row.charges), refunds: Number(row.refunds), kept: Number(row.kept) }]));
}

/** Every job completed, and charged cost per entry × entries answered with a result (the reservation less its one refund). */
async function bulkNotExact(pg: OwnPostgres): Promise<string[]> {
  const rows = await pg.query<{ id: string; status: string; charged: string; expected: string }>(
    `SELECT j.id, j.status,
            COALESCE(-c.amount, 0) - COALESCE((SELECT SUM(r.amount) FROM ledger_entries r WHERE r.refund_of = c.id), 0) AS charged,
            j.cost_per_entry * (SELECT count(*) FROM bulk_entries e WHERE e.job_id = j.id AND e.result IS NOT NULL) AS expected
       FROM bulk_jobs j LEFT JOIN ledger_entries c ON c.id = j.reservation_id`,
  );
  return rows.filter((row) => row.status !== 'completed' || row.charged !== row.expected).map((row) => JSON.stringify(row));
}
