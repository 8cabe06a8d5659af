import { Injectable } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import { routeOf } from './route-label';

const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const UPSTREAM_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10];

/**
 * The instruments the code pushes to (HTTP, upstream latency, credits), on a Registry of this app's
 * own, so several apps in one process (the tests) never share or clash. Values that already live
 * elsewhere (lookup counters, circuit state, bulk jobs) are read at scrape time by instruments their
 * features register on this registry (provider/metrics/provider-metrics.ts, bulk/bulk-metrics.ts).
 */
@Injectable()
export class Metrics {
  readonly registry = new Registry();

  private readonly httpRequests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by route pattern, method and status.',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
  });

  private readonly httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from receiving a request to the end of its response, by route pattern, method and status.',
    labelNames: ['route', 'method', 'status'] as const,
    buckets: HTTP_BUCKETS,
    registers: [this.registry],
  });

  private readonly upstreamDuration = new Histogram({
    name: 'phone_filter_upstream_request_duration_seconds',
    help: 'Time the lookup provider took to answer one check (cache misses only), by check and outcome.',
    labelNames: ['check', 'outcome'] as const,
    buckets: UPSTREAM_BUCKETS,
    registers: [this.registry],
  });

  private readonly charged = new Counter({
    name: 'phone_filter_credits_charged_total',
    help: 'Credits taken by paid calls (before refunds).',
    registers: [this.registry],
  });

  private readonly refunded = new Counter({
    name: 'phone_filter_credits_refunded_total',
    help: 'Credits given back for calls that could not be answered.',
    registers: [this.registry],
  });

  private readonly notCharged = new Counter({
    name: 'phone_filter_calls_not_charged_total',
    help: 'Paid calls (filter, risk, bulk submissions) given up on right before their charge, or refunded at their settle, by reason: client_gone (the client closed the connection; nothing is answered) or queue_deadline (waited past CALL_QUEUE_DEADLINE_MS; answered 503 with Retry-After).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  private readonly failedAuthRefused = new Counter({
    name: 'phone_filter_failed_auth_refused_total',
    help: 'Authentication attempts refused with 429 because their address went over the failed-authentication limit, by credential.',
    labelNames: ['credential'] as const,
    registers: [this.registry],
  });

  private readonly httpSeriesByKey = new Map<string, { observe(seconds: number): void }>();

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  /** Express middleware: counts and times every response under its route pattern (never the raw URL). */
  httpMiddleware(): (req: Request, res: Response, next: NextFunction) => void {
    return (req, res, next) => {
      const started = process.hrtime.bigint();
      let recorded = false;
      const record = () => {
        if (recorded) return;
        recorded = true;
        this.httpSeries(routeOf(req), req.method, res.statusCode).observe(Number(process.hrtime.bigint() - started) / 1e9);
      };
      res.once('finish', record);
      res.once('close', record);
      next();
    };
  }

  /**
   * The counter and histogram children of one route, method and status, made once: prom-client
   * otherwise hashes the label object on every call (it showed in the hot path's profile). The
   * series are bounded (route patterns, not URLs), so is this map.
   */
  private httpSeries(route: string, method: string, status: number): { observe(seconds: number): void } {
    const key = `${method} ${status} ${route}`;
    let series = this.httpSeriesByKey.get(key);
    if (!series) {
      const labels = { route, method, status: String(status) };
      const requests = this.httpRequests.labels(labels);
      const duration = this.httpDuration.labels(labels);
      series = {
        observe: (seconds) => {
          requests.inc();
          duration.observe(seconds);
        },
      };
      this.httpSeriesByKey.set(key, series);
    }
    return series;
  }

  /** Starts timing one provider call; call the result with the outcome when it settles. */
  startUpstreamTimer(check: string): (outcome: string) => void {
    const end = this.upstreamDuration.startTimer({ check });
    return (outcome) => void end({ outcome });
  }

  creditsCharged(amount: number): void {
    if (amount > 0) this.charged.inc(amount);
  }

  creditsRefunded(amount: number): void {
    if (amount > 0) this.refunded.inc(amount);
  }

  callNotCharged(reason: 'client_gone' | 'queue_deadline'): void {
    this.notCharged.inc({ reason });
  }

  failedAuthenticationRefused(credential: string): void {
    this.failedAuthRefused.inc({ credential });
  }
}
