import { Injectable, OnModuleInit, Optional } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { Metrics } from '../metrics/metrics';

/**
 * The charges of calls answered 503 that this instance still has to give back once the database
 * answers (a charge statement whose reply was lost, a settle whose outcome was unknown). They live in
 * this process only: on /metrics (`phone_filter_credits_give_backs_pending`) so that an operator sees
 * them before stopping an instance, and so that a test waits for them rather than for a clock.
 */
@Injectable()
export class PendingGiveBacks implements OnModuleInit {
  private pending = 0;

  constructor(@Optional() private readonly metrics?: Metrics) {}

  get count(): number {
    return this.pending;
  }

  /** Counts `giveBack` as pending until it has finished, however it ends. */
  track(giveBack: Promise<void>): void {
    this.pending += 1;
    void giveBack.finally(() => {
      this.pending -= 1;
    });
  }

  onModuleInit(): void {
    if (!this.metrics) return;
    const pending = () => this.pending;
    new Gauge({
      name: 'phone_filter_credits_give_backs_pending',
      help: 'Charges of calls answered 503 that this instance will give back once the database answers (held in memory).',
      registers: [this.metrics.registry],
      collect() {
        this.set(pending());
      },
    });
  }
}
