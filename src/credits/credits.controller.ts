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
  @ApiOperation({ summary: 'Credit balance', description: "The account's credit balance." })
  @ApiOkResponse({ type: BalanceDto, example: { balance: 9996 } })
  async balance(@CurrentAccount() account: AuthenticatedAccount): Promise<BalanceDto> {
    return { balance: await this.credits.balance(account.accountId) };
  }

  @Get('usage')
  @ApiOperation({
    summary: 'The credits ledger of the account, newest first (phone numbers masked).',
    description:
      'Every change of the balance is a row: TOPUP (+), CHARGE (−), REFUND (+), ADJUSTMENT (±). Pages of `limit` ' +
      'entries (1 to 100, default 50); pass `next_cursor` as `cursor` for the next, older page. A CHARGE of POST /api/v1/filter ' +
      'names, in `answered_by`, the provider that answered each check and when (a cached answer keeps its original ones); ' +
      'null once refunded.',
  })
  @ApiOkResponse({
    type: UsagePageDto,
    examples: {
      firstPage: {
        summary: 'An answered charge, a charge and its refund, a top-up',
        value: {
          entries: [
            {
              id: '1045',
              type: 'CHARGE',
              amount: -4,
              balance_after: 996,
              phone: '+44740012****',
              source: 'website',
              answered_by: { network_status: { provider: 'backup', observed_at: '2026-11-22T10:05:00.412Z' } },
              created_at: '2026-11-22T10:05:00.301Z',
            },
            { id: '1044', type: 'REFUND', amount: 4, balance_after: 1000, phone: '+44740012****', source: 'website', answered_by: null, created_at: '2026-11-22T10:00:03.120Z' },
            { id: '1043', type: 'CHARGE', amount: -4, balance_after: 996, phone: '+44740012****', source: 'website', answered_by: null, created_at: '2026-11-22T10:00:00.250Z' },
            { id: '1042', type: 'TOPUP', amount: 1000, balance_after: 1000, phone: null, source: null, answered_by: null, created_at: '2026-11-21T09:12:44.002Z' },
          ],
          next_cursor: null,
        },
      },
    },
  })
  @ApiErrors('INVALID_REQUEST')
  async usage(@CurrentAccount() account: AuthenticatedAccount, @Query() query: UsageQueryDto): Promise<UsagePageDto> {
    return this.credits.usage(account.accountId, query.limit ?? 50, query.cursor);
  }
}
