import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthenticatedAccount } from '../auth/authenticated-account';
import { CurrentAccount, CustomerApi } from '../auth/customer-api.decorator';
import { ApiErrors, CUSTOMER_API_ERRORS } from '../common/api-errors.decorator';
import { CreditsService } from './credits.service';
import { BalanceDto } from './dto/balance.dto';

@ApiTags('credits')
@CustomerApi()
@ApiErrors(...CUSTOMER_API_ERRORS)
@Controller('api/v1')
export class CreditsController {
  constructor(private readonly credits: CreditsService) {}

  @Get('balance')
  @ApiOperation({ summary: "The account's credit balance." })
  @ApiOkResponse({ type: BalanceDto })
  async balance(@CurrentAccount() account: AuthenticatedAccount): Promise<BalanceDto> {
    return { balance: await this.credits.balance(account.accountId) };
  }
}
