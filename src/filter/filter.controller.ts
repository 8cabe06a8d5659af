import { Body, Controller, Headers, HttpCode, Post, Res } from '@nestjs/common';
import { ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import type { AuthenticatedAccount } from '../auth/authenticated-account';
import { CurrentAccount, CustomerApi } from '../auth/customer-api.decorator';
import { ApiErrors, CUSTOMER_API_ERRORS } from '../common/api-errors.decorator';
import { FilterRequestDto, FilterResultDto } from './dto/filter.dto';
import { FilterService } from './filter.service';
import { IdempotencyService } from './idempotency.service';

@ApiTags('filter')
@CustomerApi()
@ApiErrors(...CUSTOMER_API_ERRORS)
@Controller('api/v1/filter')
export class FilterController {
  constructor(private readonly filters: FilterService) {}

  @Post()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Check one phone number',
    description:
      'Runs the checks enabled in the account settings and answers synchronously. Costs the sum of the enabled ' +
      "checks' prices (see GET /api/v1/settings); a 503 PROVIDER_UNAVAILABLE is refunded.",
  })
  @ApiHeader({ name: 'Idempotency-Key', required: false, description: 'Retry safely: same key and body within 24 h → same answer, charged once.' })
  @ApiOkResponse({ type: FilterResultDto })
  @ApiErrors('INVALID_REQUEST', 'INSUFFICIENT_CREDITS', 'IDEMPOTENCY_CONFLICT', 'PAYLOAD_TOO_LARGE', 'PROVIDER_UNAVAILABLE')
  async filter(
    @CurrentAccount() account: AuthenticatedAccount,
    @Body() body: FilterRequestDto,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Res({ passthrough: true }) response: Response,
  ): Promise<FilterResultDto> {
    const outcome = await this.filters.filter(account, body, IdempotencyService.validateKey(idempotencyKey));
    if (outcome.replayed) response.setHeader('Idempotent-Replayed', 'true');
    return outcome.result;
  }
}
