import 'reflect-metadata';
import { Body, Controller, Get, HttpCode, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';

/**
 * The yardsticks, measured in the same run as the service: a bare NestJS/Express route (GET, and a
 * POST of a JSON body like /filter's), and, with BENCH_LEDGER_DATABASE_URL and BENCH_LEDGER_ACCOUNT,
 * PostgreSQL's floor for a paid call: one INSERT of the ledger row a cache-hit /filter writes (same
 * table, same indexes, asynchronous commit like the charge statement), through a pool of the
 * service's size.
 */
const ledger = process.env.BENCH_LEDGER_DATABASE_URL
  ? { pool: new Pool({ connectionString: process.env.BENCH_LEDGER_DATABASE_URL, max: Number(process.env.DATABASE_POOL_SIZE ?? 20) }), account: process.env.BENCH_LEDGER_ACCOUNT! }
  : undefined;

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
    if (!ledger) throw new Error('BENCH_LEDGER_DATABASE_URL is not set');
    await ledger.pool.query({
      name: 'bench-ledger-floor',
      text: `WITH s AS (SELECT set_config('synchronous_commit', 'off', true))
             INSERT INTO ledger_entries (account_id, type, amount, balance_after, reference, phone, source, settled_at)
             SELECT $1, 'CHARGE', -1, 1000000, $2, '+44740012****', 'bench', now() FROM s`,
      values: [ledger.account, `charge:${randomUUID()}`],
    });
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
