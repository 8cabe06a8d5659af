import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthenticatedAccount } from '../auth/authenticated-account';
import { CurrentAccount, CustomerApi } from '../auth/customer-api.decorator';
import { ApiErrors, CUSTOMER_API_ERRORS } from '../common/api-errors.decorator';
import { CreditsService } from './credits.service';
import { BalanceDto } from './dto/balance.dto';
import { UsagePageDto, UsageQueryDto } from './dto/usage.dto';

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

  @Get('usage')
  @ApiOperation({ summary: 'The credits ledger of the account, newest first (phone numbers masked).' })
  @ApiOkResponse({ type: UsagePageDto })
  @ApiErrors('INVALID_REQUEST')
  async usage(@CurrentAccount() account: AuthenticatedAccount, @Query() query: UsageQueryDto): Promise<UsagePageDto> {
    const page = await this.credits.usage(account.accountId, query.limit ?? 50, query.cursor);
    return {
      entries: page.entries.map((entry) => ({
        id: entry.id,
        type: entry.type,
        amount: entry.amount,
        balance_after: entry.balanceAfter,
        phone: entry.phone,
        source: entry.source,
        created_at: entry.createdAt.toISOString(),
      })),
      next_cursor: page.nextCursor,
    };
  }
}
