import 'reflect-metadata';
import { Body, Controller, Get, HttpCode, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import Redis from 'ioredis';
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { FIXED_WINDOW_SCRIPT } from '../../src/rate-limit/redis-rate-limit.storage';

/**
 * The yardsticks, measured in the same run as the service: a bare NestJS/Express route (GET, and a
 * POST of a JSON body like /filter's), and, with BENCH_LEDGER_DATABASE_URL and BENCH_LEDGER_ACCOUNT,
 * PostgreSQL's floor for a paid call: one INSERT of the ledger row a cache-hit /filter writes (same
 * table, same indexes, asynchronous commit like the charge statement), through a pool of the
 * service's size. With BENCH_REDIS_URL too, the round-trip floor: the two round trips a cache-hit
 * /filter makes one after the other, the plan limit's script in Redis (the service's own, one key)
 * and then that INSERT, with nothing else around them.
 */
const ledger = process.env.BENCH_LEDGER_DATABASE_URL
  ? { pool: new Pool({ connectionString: process.env.BENCH_LEDGER_DATABASE_URL, max: Number(process.env.DATABASE_POOL_SIZE ?? 20) }), account: process.env.BENCH_LEDGER_ACCOUNT! }
  : undefined;

interface LimitClient {
  countHits(hitKey: string, blockKey: string, ttlMs: number, limit: number, blockDurationMs: number, count: number): Promise<unknown>;
}

const limits = process.env.BENCH_REDIS_URL ? new Redis(process.env.BENCH_REDIS_URL, { enableAutoPipelining: false }) : undefined;
limits?.defineCommand('countHits', { numberOfKeys: 2, lua: FIXED_WINDOW_SCRIPT });

/** One ledger row of a cache-hit /filter's charge, as that charge commits it (asynchronously). */
async function insertLedgerRow(): Promise<void> {
  if (!ledger) throw new Error('BENCH_LEDGER_DATABASE_URL is not set');
  await ledger.pool.query({
    name: 'bench-ledger-floor',
    text: `WITH s AS (SELECT set_config('synchronous_commit', 'off', true))
           INSERT INTO ledger_entries (account_id, type, amount, balance_after, reference, phone, source, settled_at)
           SELECT $1, 'CHARGE', -1, 1000000, $2, '+44740012****', 'bench', now() FROM s`,
    values: [ledger.account, `charge:${randomUUID()}`],
  });
}

@Controller()
class BareController {
  @Get('bare')
  bare(): { ok: true } {
    return { ok: true };
  }

  @Post('bare')
  @HttpCode(200)
  barePost(@Body() body: { phone?: string }): { ok: true; phone: string | undefined } {
    return { ok: true, phone: body.phone };
  }

  @Post('bare/ledger')
  @HttpCode(200)
  async ledgerInsert(): Promise<{ ok: true }> {
    await insertLedgerRow();
    return { ok: true };
  }

  @Post('bare/limit-ledger')
  @HttpCode(200)
  async limitThenLedger(): Promise<{ ok: true }> {
    if (!limits) throw new Error('BENCH_REDIS_URL is not set');
    await (limits as unknown as LimitClient).countHits('{bench}:hits', '{bench}:block', 1000, 1_000_000_000, 0, 1);
    await insertLedgerRow();
    return { ok: true };
  }
}

@Module({ controllers: [BareController] })
class BareModule {}

async function main(): Promise<void> {
  const app = await NestFactory.create(BareModule, { logger: false });
  await app.listen(Number(process.env.PORT ?? 3999), '127.0.0.1');
  console.log('bare app listening on');
}

void main();
