/**
 * The fixed-rate summary again from a saved log of its rows (the table fixed-rate.ts prints on stderr
 * while it runs): `node -r ts-node/register/transpile-only tools/bench/fixed-rate-summary.ts <log>`,
 * with the BENCH_FIXED_DURATION of that run.
 */
import { readFileSync } from 'node:fs';
import { summarize, type FixedRateRow } from './fixed-rate';

const rows: FixedRateRow[] = [];
for (const line of readFileSync(process.argv[2], 'utf8').split('\n')) {
  const cells = line.split('|').map((cell) => cell.trim());
  if (cells.length < 16 || !/^\d+$/.test(cells[1])) continue;
  const [, run, runtime, build, rate, route, answered, p50, p99, p99_9, service, postgres, redis, wal, loop, heap, , , failed, inServer, , io] = cells;
  const [reads, writes] = (io ?? '').split('/').map((v) => Number(v.trim()));
  // "allocated / promoted (+old old)"
  const [allocated, promoted] = (heap ?? '').split('/').map((v) => parseFloat(v));
  const [loopP99, loopMax] = loop.split('/').map((v) => Number(v.trim()));
  const [serverP50, serverP99, serverP99_9] = (inServer ?? '').split('/').map((v) => Number(v.trim()));
  const server = Number.isFinite(serverP99) ? { p50: serverP50, p99: serverP99, p99_9: serverP99_9, max: NaN } : undefined;
  const duration = Number(process.env.BENCH_FIXED_DURATION ?? 15);
  rows.push({
    run: Number(run),
    runtime,
    build,
    rate: Number(rate),
    route: route as FixedRateRow['route'],
    figures: { requestsPerSecond: Number(answered), p50: Number(p50), p99: Number(p99), p99_9: Number(p99_9), requests: Number(answered) * duration, non2xx: Number(failed) || 0, errors: 0 },
    serviceCpu: Number(service),
    postgresCpu: Number(postgres),
    redisCpu: Number(redis),
    walBytes: Number(wal),
    loop: Number.isFinite(loopP99) ? { p50: NaN, p90: NaN, p99: loopP99, p99_9: NaN, max: loopMax, server } : undefined,
    allocatedBytes: Number.isFinite(allocated) ? allocated : undefined,
    promotedBytes: Number.isFinite(promoted) ? promoted : undefined,
    syscalls: Number.isFinite(reads) && Number.isFinite(writes) ? { reads, writes } : undefined,
  });
}
console.log(summarize(rows).join('\n'));
