import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { Clock } from '../common/clock';
import { Scheduler } from '../common/scheduler';
import { AppConfig } from '../config/app-config';
import { ProviderHealth, ProviderHealthStatus } from '../provider/provider-health';

/**
 * The upstreams' reachability for /health/ready, probed in the background (issue 35 point 4): with the
 * probe in the request, a readiness check took as long as the slowest upstream (1.52 s with upstreams at
 * 1.5 s), so a load balancer with a 1 s timeout marked every instance down exactly when the upstreams
 * were slow. A job on the Scheduler probes every READINESS_PROBE_INTERVAL_MS; readiness reads the last
 * result beside the breakers' and router's current state (before the first probe, an upstream counts as
 * reachable unless its breakers say otherwise: the start-up itself already checked the configuration).
 */
@Injectable()
export class ReadinessProbe implements OnApplicationBootstrap {
  static readonly JOB = 'readiness-probe';
  private last: ProviderHealthStatus | undefined;
  private probedAt: Date | undefined;

  constructor(
    private readonly health: ProviderHealth,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly scheduler: Scheduler,
  ) {}

  onApplicationBootstrap(): void {
    this.scheduler.every({ name: ReadinessProbe.JOB, everyMs: this.config.provider.probeIntervalMs }, () => this.probe());
  }

  /** One round: probes every upstream and keeps the answer. */
  async probe(): Promise<ProviderHealthStatus> {
    const status = await this.health.check();
    this.last = status;
    this.probedAt = this.clock.date();
    return status;
  }

  /** What readiness answers about the providers: no upstream is asked. */
  known(): ProviderHealthStatus {
    return this.health.known(this.last, this.probedAt);
  }
}
