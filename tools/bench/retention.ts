/**
 * Retention at scale (docs/privacy.md "Retention at scale"): fills DATABASE_URL (a database of its own:
 * it adds millions of rows) with rows past their retention — bulk entries, unmasked ledger phones, expired
 * Idempotency-Keys — then runs each retention job batch by batch while a client calls /filter without
 * pause, and prints the time of each job, its longest batch, and /filter's latency before and during.
 *
 *   DATABASE_URL=postgres://…/retention_bench node -r ts-node/register/transpile-only tools/bench/retention.ts [bulk jobs of 1000] [ledger rows] [keys]
 */
import { performance } from 'node:perf_hooks';
import { DataSource } from 'typeorm';
import { BulkPrivacyService } from '../../src/bulk/bulk-privacy.service';
import { LedgerPrivacyService } from '../../src/credits/ledger-privacy.service';
import { IdempotencyService } from '../../src/idempotency/idempotency.service';
import { withBenchService } from './in-process-service';

const [jobs = 3000, ledgerRows = 1_000_000, keys = 1_000_000] = process.argv.slice(2).map(Number);

async function fill(db: DataSource, accountId: string): Promise<void> {
  const started = performance.now();
  // Jobs and their entries in one transaction, as the service writes them: the instance's own retention
  // run (its first comes a minute after start-up) must not see a job without its entries.
  await db.transaction(async (em) => {
    await em.query(
      `INSERT INTO bulk_jobs (id, account_id, status, total, processed, charged_entries, cost_per_entry, cost, checks, csv_layout, source, chunks, created_at, started_at, completed_at)
       SELECT gen_random_uuid(), $1, 'completed', 1000, 1000, 0, 0, 0, '{}', '{"answer":[],"answered_by":[]}', 'retention-bench', 10,
              now() - interval '40 days', now() - interval '40 days', now() - interval '31 days' FROM generate_series(1, $2)`,
      [accountId, jobs],
    );
    await em.query(
      `INSERT INTO bulk_entries (job_id, idx, phone, chunk, result, done_at)
       SELECT j.id, g, '+4474' || lpad(g::text, 8, '0'), 0, '{"valid":true}', now() - interval '31 days'
         FROM bulk_jobs j, generate_series(0, 999) g WHERE j.source = 'retention-bench'`,
    );
  });
  await db.query(
    `INSERT INTO ledger_entries (account_id, type, amount, balance_after, reference, phone, source, settled_at, created_at)
     SELECT $1, 'CHARGE', 0, 0, 'retention-bench:' || g, '+4474' || lpad(g::text, 8, '0'), 'bench', now() - interval '91 days', now() - interval '91 days'
       FROM generate_series(1, $2) g`,
    [accountId, ledgerRows],
  );
  await db.query(
    `INSERT INTO idempotency_keys (account_id, key, request_hash, status, created_at, claimed_at)
     SELECT $1, 'retention-bench-' || g, repeat('a', 64), 'completed', now() - interval '49 hours', now() - interval '49 hours'
       FROM generate_series(1, $2) g`,
    [accountId, keys],
  );
  await db.query('ANALYZE');
  console.log(`filled: ${jobs * 1000} bulk entries, ${ledgerRows} ledger rows, ${keys} keys in ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

/** Calls /filter one after another until `stop`; the latencies in ms. */
async function callWhile(base: string, headers: Record<string, string>, stop: () => boolean): Promise<number[]> {
  const latencies: number[] = [];
  while (!stop()) {
    const started = performance.now();
    const res = await fetch(`${base}/api/v1/filter`, { method: 'POST', headers, body: JSON.stringify({ phone: '+447400123456' }) });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`/filter answered ${res.status}`);
    latencies.push(performance.now() - started);
  }
  return latencies;
}

function summary(latencies: number[]): string {
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))].toFixed(1);
  return `${sorted.length} calls, p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${sorted[sorted.length - 1].toFixed(1)} ms`;
}

async function main(): Promise<void> {
  await withBenchService({ latencyMs: 5, credits: 1_000_000_000, env: { RETENTION_INTERVAL_SECONDS: '86400' } }, async (service) => {
    const db = service.app.get(DataSource);
    const [{ account_id: accountId }] = await db.query(`SELECT account_id FROM api_keys ORDER BY created_at DESC LIMIT 1`);
    await fill(db, accountId);
    const limit = service.config.retention.batchSize;
    const now = new Date();
    const jobsToRun: Array<[string, () => Promise<number>]> = [
      ['bulk entries', () => service.app.get(BulkPrivacyService).deleteExpiredEntries(limit, now)],
      ['ledger phones masked', () => service.app.get(LedgerPrivacyService).maskOldPhones(limit, now)],
      ['idempotency keys', () => service.app.get(IdempotencyService).deleteExpired(limit, now)],
    ];
    let purging = false;
    await callWhileFor(service.base, service.headers, 5_000); // warm-up, not counted
    const before = await callWhileFor(service.base, service.headers, 10_000);
    console.log(`/filter before the purge: ${summary(before)}`);
    purging = true;
    const during = callWhile(service.base, service.headers, () => !purging);
    for (const [name, batch] of jobsToRun) {
      const started = performance.now();
      let rows = 0;
      let batches = 0;
      let longest = 0;
      for (;;) {
        const batchStarted = performance.now();
        const done = await batch();
        longest = Math.max(longest, performance.now() - batchStarted);
        rows += done;
        batches += 1;
        if (done < limit) break;
        await new Promise((resolve) => setImmediate(resolve));
      }
      console.log(`${name}: ${rows} rows in ${batches} batches of ≤ ${limit}, ${((performance.now() - started) / 1000).toFixed(1)} s, longest batch ${longest.toFixed(0)} ms`);
    }
    purging = false;
    console.log(`/filter during the purge: ${summary(await during)}`);
    console.log(`/filter after the purge: ${summary(await callWhileFor(service.base, service.headers, 10_000))}`);
  });
}

function callWhileFor(base: string, headers: Record<string, string>, ms: number): Promise<number[]> {
  const until = Date.now() + ms;
  return callWhile(base, headers, () => Date.now() > until);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
