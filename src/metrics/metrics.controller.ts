import { Controller, Get, Header, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Metrics } from './metrics';

@ApiTags('operations')
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: Metrics) {}

  @Get()
  @Header('Cache-Control', 'no-store')
  @ApiOperation({
    summary: 'Prometheus metrics',
    description:
      'Prometheus metrics (text exposition format). With OPS_ENDPOINTS=private (the production default) it needs `Authorization: Bearer <METRICS_TOKEN or ADMIN_TOKEN>`.',
  })
  @ApiProduces('text/plain')
  @ApiOkResponse({ description: 'Prometheus text format 0.0.4', schema: { type: 'string', example: 'http_requests_total{route="/api/v1/filter",method="POST",status="200"} 42' } })
  async scrape(@Res() res: Response): Promise<void> {
    const body = await this.metrics.registry.metrics();
    // end(), not send(): Express would rewrite the content type's parameters.
    res.status(200).setHeader('Content-Type', this.metrics.registry.contentType);
    res.end(body);
  }
}
