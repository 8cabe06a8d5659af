import { Controller, Get, Req, ServiceUnavailableException } from '@nestjs/common';
import type { Request } from 'express';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { HealthCheckResult, HealthCheckService, HealthIndicatorResult, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { ApiErrors } from '../common/api-errors.decorator';
import { AppError } from '../common/errors';
import { ProviderHealth } from '../provider/provider-health';
import { ReadinessProbe } from './readiness-probe';

@ApiTags('health')
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly provider: ProviderHealth,
    private readonly probe: ReadinessProbe,
  ) {}

  @Get('live')
  @ApiOperation({ summary: 'Liveness', description: 'The process is up (no dependencies checked).' })
  @ApiOkResponse({
    description: 'Always, while the process runs.',
    schema: { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['ok'] } } },
    example: { status: 'ok' },
  })
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  @Get('ready')
  @ApiOperation({
    summary: 'Ready to serve: the database, the lookup cache store and the lookup provider answer.',
    description:
      'For load balancers and orchestrators: 503 SERVICE_UNAVAILABLE, naming what is down, when any of them does not answer. ' +
      'The upstreams are not asked during the request: their entry is the last background probe (every READINESS_PROBE_INTERVAL_MS, ' +
      '`probed_at`) with their breakers\' and the router\'s current state, so a slow upstream never makes readiness slow. With ' +
      'OPS_ENDPOINTS=private (the production default) only `{"status":"ok"}` / a bare 503 unless the ADMIN_TOKEN or METRICS_TOKEN is sent.',
  })
  @ApiOkResponse({
    description:
      'Every dependency answers. The provider entry lists each upstream (one or several) by its provider id: whether it answers, ' +
      'its state for the router (`up`, `demoted`: asked after the healthy ones, `breaker_open`, `down`), whether its results are simulated ' +
      '(sandbox), the state of its circuit breaker per lane (interactive, batch) and, with several upstreams, per lane the router\'s window ' +
      'of recent attempts (`recent`: calls, failure_rate, median_latency_ms, demoted, reason). ' +
      'The provider is up while at least one upstream answers.',
    schema: {
      type: 'object',
      required: ['status'],
      properties: {
        status: { type: 'string', enum: ['ok'] },
        info: { type: 'object', additionalProperties: { type: 'object', additionalProperties: true, properties: { status: { type: 'string', enum: ['up'] } } } },
        error: { type: 'object' },
        details: { type: 'object', additionalProperties: { type: 'object', additionalProperties: true, properties: { status: { type: 'string', enum: ['up', 'down'] } } } },
      },
      example: {
        status: 'ok',
        info: {
          database: { status: 'up' },
          cache: { status: 'up', store: 'memory', reachable: true },
          provider: { status: 'up', reachable: true, providers: [{ provider: 'sandbox', state: 'up', simulated: true, reachable: true }] },
        },
      },
    },
  })
  @ApiErrors('SERVICE_UNAVAILABLE')
  async ready(@Req() request: Request): Promise<HealthCheckResult | { status: 'ok' }> {
    const detail = request.opsDetail !== false;
    try {
      const result = await this.health.check([
        () => this.database.pingCheck('database', { timeout: 1500 }),
        async (): Promise<HealthIndicatorResult> => {
          const cache = await this.provider.cache();
          return { cache: { status: cache.reachable ? 'up' : 'down', ...cache } };
        },
        async (): Promise<HealthIndicatorResult> => {
          const provider = this.probe.known();
          return { provider: { status: provider.reachable ? 'up' : 'down', ...provider } };
        },
      ]);
      return detail ? result : { status: 'ok' };
    } catch (error) {
      if (!(error instanceof ServiceUnavailableException)) throw error;
      if (!detail) throw new AppError('SERVICE_UNAVAILABLE', 'Not ready.');
      const result = error.getResponse() as HealthCheckResult;
      const down = Object.keys(result.error ?? {});
      throw new AppError('SERVICE_UNAVAILABLE', `Not ready: ${down.join(', ') || 'a dependency'} unavailable.`);
    }
  }
}
