import { BeforeApplicationShutdown, Injectable, Logger, OnModuleInit, Optional } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { shutdownStep } from '../common/shutdown-steps';
import { Metrics } from '../metrics/metrics';

/**
 * The charges of calls answered 503 that this instance still has to give back once the database
 * answers (a charge statement whose reply was lost, a settle whose outcome was unknown). They live in
 * this process only: on /metrics (`phone_filter_credits_give_backs_pending`) so that an operator sees
 * them, and so that a test waits for them rather than for a clock. A graceful shutdown waits for them
 * (within SHUTDOWN_TIMEOUT_MS) before the database pool closes.
 */
@Injectable()
export class PendingGiveBacks implements OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger('Credits');
  private readonly pending = new Set<Promise<void>>();

  constructor(@Optional() private readonly metrics?: Metrics) {}

  get count(): number {
    return this.pending.size;
  }

  /** Counts `giveBack` as pending until it has finished, however it ends. */
  track(giveBack: Promise<void>): void {
    const tracked = giveBack.catch(() => undefined).finally(() => this.pending.delete(tracked));
    this.pending.add(tracked);
  }

  async beforeApplicationShutdown(): Promise<void> {
    if (this.pending.size === 0) return;
    this.logger.warn(`Waiting for ${this.pending.size} charge(s) of calls answered 503 to be given back before closing the database`);
    await shutdownStep('giving back the charges of calls answered 503', () => Promise.all([...this.pending]));
  }

  onModuleInit(): void {
    if (!this.metrics) return;
    const pending = () => this.pending.size;
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
