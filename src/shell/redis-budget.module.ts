import { Global, MiddlewareConsumer, Module, NestModule, Optional } from '@nestjs/common';
import { Counter, Gauge } from 'prom-client';
import { RedisBudget } from '../common/redis-budget';
import { AppConfig } from '../config/app-config';
import { Metrics } from '../metrics/metrics';

/** The per-request Redis allowance (REDIS_CALL_BUDGET_MS): its middleware on every route, its counters on /metrics. */
@Global()
@Module({
  providers: [{ provide: RedisBudget, inject: [AppConfig], useFactory: (config: AppConfig) => new RedisBudget(config.redisCallBudgetMs) }],
  exports: [RedisBudget],
})
export class RedisBudgetModule implements NestModule {
  constructor(
    private readonly budget: RedisBudget,
    private readonly config: AppConfig,
    @Optional() metrics?: Metrics,
  ) {
    if (metrics) registerRedisBudgetMetrics(metrics, budget);
  }

  configure(consumer: MiddlewareConsumer): void {
    // Without REDIS_URL no request waits on Redis: no allowance to keep.
    if (this.config.redisUrl) consumer.apply(this.budget.middleware).forRoutes('{*path}');
  }
}

function registerRedisBudgetMetrics(metrics: Metrics, budget: RedisBudget): void {
  const { counters } = budget;
  new Counter({
    name: 'phone_filter_redis_operations_total',
    help: "Redis operations of API requests, by outcome: answered within the request's allowance (REDIS_CALL_BUDGET_MS), cut_short by it, skipped (the allowance spent), sent_after_budget (always 0).",
    labelNames: ['outcome'] as const,
    registers: [metrics.registry],
    collect() {
      this.reset();
      this.inc({ outcome: 'answered' }, counters.answered);
      this.inc({ outcome: 'cut_short' }, counters.cutShort);
      this.inc({ outcome: 'skipped' }, counters.skipped);
      this.inc({ outcome: 'sent_after_budget' }, counters.sentAfterBudget);
    },
  });
  new Counter({
    name: 'phone_filter_redis_calls_over_budget_total',
    help: 'API requests that spent their whole Redis allowance and went on without Redis.',
    registers: [metrics.registry],
    collect() {
      this.reset();
      this.inc(counters.callsOverBudget);
    },
  });
  new Gauge({
    name: 'phone_filter_redis_longest_call_wait_seconds',
    help: 'The longest an API request has waited on Redis in all, since start-up (bounded by REDIS_CALL_BUDGET_MS).',
    registers: [metrics.registry],
    collect() {
      this.set(counters.longestCallWaitMs / 1000);
    },
  });
}
