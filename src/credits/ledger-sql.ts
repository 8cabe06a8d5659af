/**
 * The SQL of the ledger's statements (CreditsRepository): the fragments they share and the charge
 * statement itself, which runs prepared (see preparedQuery) on the request path.
 */

/**
 * A charge statement with a deadline ($8) takes the account only before it, and waits for the account's
 * lock no longer than until it (lock_timeout, read by PostgreSQL when the wait starts, so set by the
 * same statement first). Its caller answers 503 at the deadline's end. A statement that took the account
 * in time may still commit after it (a starved server, a second lock wait: lock_timeout bounds each
 * wait, not the statement), which the batcher's give-back waits for (ChargeBatcher.giveBackIfLanded).
 */
const WITHIN_DEADLINE = `($8::timestamptz IS NULL OR (clock_timestamp() < $8::timestamptz AND set_config('lock_timeout',
  greatest(1, ceil(extract(epoch FROM $8::timestamptz - clock_timestamp()) * 1000))::bigint::text, true) IS NOT NULL))`;
export const IDEMPOTENT_CHARGE_INDEX = 'ledger_entries_idempotency_key_unique';

/**
 * Charge, settle and refund commit asynchronously (`synchronous_commit = off` for that statement's
 * transaction only). The account row is locked until commit, so a synchronous commit makes every
 * call of one account wait for the previous WAL flush: ~600 charges/s on one account here, ~4,900
 * without. What a Postgres crash can lose is the last fraction of a second of these commits, and each
 * loss favours the customer while keeping balance = ledger sum: a lost charge is a free call; a lost
 * settle or refund leaves the charge unsettled, and the sweep refunds it. A crash of the service
 * itself loses nothing (Postgres has the rows). Top-ups and adjustments stay synchronous.
 */
export const ASYNC_COMMIT = `set_config('synchronous_commit', 'off', true) IS NOT NULL`;

/**
 * The UTC day the daily spending cap counts (accounts.spent_day / spent_today), of the time `at`: the
 * placeholder of the statement's one reading of the Clock (src/common/clock.ts), so that every use of
 * the day in a statement names the same day, and a test moves it past midnight by moving the clock.
 */
const today = (at: string) => `(${at}::timestamptz AT TIME ZONE 'UTC')::date`;
/**
 * The day a charge of account `a` at the time `at` counts on: the day only moves forward. The time is
 * read before the statement runs, so a statement whose time was read just before midnight may take the
 * row lock after one of the next day: it then counts on that next day (with its spend), rather than
 * counting from zero and setting the day back (which would wipe the next day's count and let the cap be passed).
 */
export const CHARGE_DAY = (at: string) => `greatest(a.spent_day, ${today(at)})`;
/** What account `a` has been charged on the day a charge at the time `at` counts on. */
export const SPENT_TODAY = (at: string) => `CASE WHEN a.spent_day >= ${today(at)} THEN a.spent_today ELSE 0 END`;
/** The account's daily_credit_limit (null: none). Read unlocked: a concurrent change of the setting may apply from the next statement. */
export const DAILY_CAP = `(SELECT s.daily_credit_limit FROM account_settings s WHERE s.account_id = a.id)`;
/** A refund of a charge made today (UTC) gives its allowance back; one of another day changes nothing today. */
export const GIVE_BACK = (amount: string) =>
  `spent_today = CASE WHEN a.spent_day = (charge.created_at AT TIME ZONE 'UTC')::date THEN greatest(a.spent_today - ${amount}, 0) ELSE a.spent_today END`;

/**
 * CTEs that, in the statement of a charge, record one `balance.low` account event (the outbox of
 * webhooks/) when the charge takes the balance of account $1 from at or above its
 * low_balance_threshold to below it, and mark the alert as sent: no second event until a top-up
 * re-arms it (`credit`). `before` and `after` are SQL expressions over `source`.
 */
export function lowBalanceAlert(source: string, before: string, after: string): string {
  return `low AS (
         UPDATE account_settings s SET low_balance_alerted = true FROM ${source}
          WHERE s.account_id = $1 AND NOT s.low_balance_alerted AND s.low_balance_threshold IS NOT NULL
            AND ${before} >= s.low_balance_threshold AND ${after} < s.low_balance_threshold
         RETURNING s.low_balance_threshold AS threshold, ${after} AS balance),
       alert AS (
         INSERT INTO account_events (account_id, type, payload, phone_hashes)
         SELECT $1, 'balance.low', jsonb_build_object('account_id', $1::text, 'balance', low.balance, 'threshold', low.threshold), '{}'::text[] FROM low
         RETURNING 1)`;
}

/** A row of the charge statement's answer: one per call, in the order of the calls. */
export interface ChargeRow {
  reference: string;
  id: string | null;
  balance_after: string | null;
  duplicate: boolean;
  late: boolean;
  over_cap: boolean | null;
}

/**
 * The charge of a batch of calls of one account at one price (CreditsRepository.chargeMany): $1 account,
 * $2 cost, $3-$7 the calls (reference, phone, source, Idempotency-Key id, settled), $8 the deadline, $9 each
 * call's provenance (src/checks/provenance.ts; null but for a call charged settled with its answer known),
 * $10 the time of the charge by the Clock (its day for the spending cap, the rows' created_at and settled_at).
 */
export const CHARGE_STATEMENT = `WITH account AS (
         SELECT a.balance, ${SPENT_TODAY('$10')} AS spent, ${CHARGE_DAY('$10')} AS day, ${DAILY_CAP} AS cap
           FROM accounts a WHERE a.id = $1 AND ${ASYNC_COMMIT} AND ${WITHIN_DEADLINE} FOR NO KEY UPDATE OF a),
       call AS (
         SELECT * FROM unnest($3::text[], $4::text[], $5::text[], $6::uuid[], $7::boolean[], $9::json[]) WITH ORDINALITY
                    AS c(reference, phone, source, key_id, settled, answered_by, ordinal)),
       eligible AS (
         SELECT c.*, row_number() OVER (ORDER BY c.ordinal) AS rank FROM call c
          WHERE c.key_id IS NULL
             OR (NOT EXISTS (SELECT 1 FROM ledger_entries l WHERE l.idempotency_key_id = c.key_id)
                 AND NOT EXISTS (SELECT 1 FROM call d WHERE d.key_id = c.key_id AND d.ordinal < c.ordinal))),
       accepted AS (
         SELECT e.*, account.balance - e.rank * $2::bigint AS balance_after
           FROM account, eligible e WHERE e.rank * $2::bigint <= account.balance
            AND (account.cap IS NULL OR account.spent + e.rank * $2::bigint <= account.cap)),
       debit AS (
         UPDATE accounts SET balance = (SELECT balance FROM account) - $2::bigint * (SELECT count(*) FROM accepted),
                             spent_today = (SELECT spent FROM account) + $2::bigint * (SELECT count(*) FROM accepted),
                             spent_day = (SELECT day FROM account)
          WHERE id = $1 AND EXISTS (SELECT 1 FROM accepted) RETURNING id),
       ${lowBalanceAlert('account', 'account.balance', 'account.balance - $2::bigint * (SELECT count(*) FROM accepted)')},
       written AS (
         INSERT INTO ledger_entries (account_id, type, amount, balance_after, reference, phone, source, idempotency_key_id, created_at, settled_at, answered_by)
         SELECT debit.id, 'CHARGE', -$2::bigint, a.balance_after, a.reference, a.phone, a.source, a.key_id,
                $10::timestamptz, CASE WHEN a.settled THEN $10::timestamptz END, a.answered_by
           FROM accepted a, debit ORDER BY a.ordinal
         RETURNING id, reference, balance_after)
       SELECT c.reference, w.id, w.balance_after, e.reference IS NULL AS duplicate,
              $8::timestamptz IS NOT NULL AND NOT EXISTS (SELECT 1 FROM account) AND clock_timestamp() >= $8::timestamptz AS late,
              -- Whether the first refused call would pass the daily cap (else the balance refused it).
              (SELECT account.cap IS NOT NULL AND account.spent + ((SELECT count(*) FROM accepted) + 1) * $2::bigint > account.cap FROM account) AS over_cap
         FROM call c LEFT JOIN written w ON w.reference = c.reference LEFT JOIN eligible e ON e.reference = c.reference`;
