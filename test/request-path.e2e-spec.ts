import { ApplicationConfig } from '@nestjs/core';
import request from 'supertest';
import { ApiKeyGuard } from '../src/auth/api-key.guard';
import { BodyErrorGuard } from '../src/common/body-error.guard';
import { TransactionHost, TypeOrmTx } from '../src/database/transactions';
import { PlanRateLimitGuard } from '../src/rate-limit/plan-rate-limit.guard';
import { createAccount } from './factories/accounts';
import { startTestApp, TestApp } from './helpers/test-app';

/**
 * What every request goes through, beyond its route: no global interceptor (one puts each request
 * through an RxJS chain and AsyncResource.bind, whose per-call hidden classes keep the request alive
 * until a major GC: docs/architecture.md, "What a call may leave behind"), and the app's three global guards only.
 */
describe('request path', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp()));
  afterAll(() => t.close());

  const applicationConfig = () => t.app.get(ApplicationConfig);

  it('registers no global interceptor (nestjs-cls registers an unmounted no-op one)', () => {
    expect(applicationConfig().getGlobalRequestInterceptors()).toHaveLength(0);
    expect(applicationConfig().getGlobalInterceptors()).toHaveLength(0);
  });

  it("registers only the app's guards (not nestjs-cls's unmounted no-op guard)", () => {
    expect(applicationConfig().getGlobalRequestGuards()).toHaveLength(0);
    const guards = applicationConfig()
      .getGlobalGuards()
      .map((guard) => guard.constructor);
    expect(guards).toEqual([ApiKeyGuard, PlanRateLimitGuard, BodyErrorGuard]);
  });

  it('still runs a transaction context without them: the statements of withTransaction share one transaction', async () => {
    const txHost = t.app.get<TransactionHost<TypeOrmTx>>(TransactionHost);
    const xact = async () => ((await txHost.tx.query('SELECT pg_current_xact_id()::text AS id')) as Array<{ id: string }>)[0].id;
    const inside = await txHost.withTransaction(async () => ({ active: txHost.isTransactionActive(), ids: [await xact(), await xact()] }));
    expect(inside.active).toBe(true);
    expect(inside.ids[0]).toBe(inside.ids[1]);
    expect(txHost.isTransactionActive()).toBe(false);
    expect(await xact()).not.toBe(await xact()); // outside: each statement its own transaction
  });

  it('answers a paid call through the guards as before', async () => {
    const account = await createAccount(t, { credits: 5 });
    const res = await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: '+447400123456' });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toHaveLength(6);
    expect(res.headers['ratelimit-limit']).toBeDefined();
    const balance = await request(t.http).get('/api/v1/balance').set(account.auth);
    expect(balance.body.balance).toBeLessThan(5);
  });
});
