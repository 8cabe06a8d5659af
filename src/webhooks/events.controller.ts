import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthenticatedAccount } from '../auth/authenticated-account';
import { CurrentAccount, CustomerApi } from '../auth/customer-api.decorator';
import { ApiErrors, CUSTOMER_API_ERRORS } from '../common/api-errors.decorator';
import { AccountEventPageDto, EventsQueryDto } from './dto/events.dto';
import { EventsService } from './events.service';

@ApiTags('events')
@CustomerApi()
@ApiErrors(...CUSTOMER_API_ERRORS)
@Controller('api/v1/events')
export class EventsController {
  constructor(private readonly events: EventsService) {}

  @Get()
  @ApiOperation({
    summary: "The account's events of the last 30 days, newest first, with their delivery state",
    description:
      "Events are POSTed to the settings' webhook_url as `{ \"id\", \"type\", \"created_at\", \"data\" }`, signed like bulk " +
      'callbacks (`X-Signature` = hex HMAC-SHA256 of `<X-Signature-Timestamp>.<body>` with the webhook_secret) and retried ' +
      'with a doubling delay. Types: `balance.low` (a charge took the balance below `low_balance_threshold`; once per ' +
      'crossing, again after the balance is back at or above it) and `bulk.completed` (a job submitted without callback_url).',
  })
  @ApiOkResponse({
    type: AccountEventPageDto,
    examples: {
      events: {
        summary: 'A delivered alert',
        value: {
          events: [
            {
              id: '42',
              type: 'balance.low',
              data: { account_id: '5b0c6f1e-8a8c-4f6e-9a52-0d4c1d8b2f10', balance: 996, threshold: 1000 },
              state: 'delivered',
              attempts: 1,
              last_error: null,
              created_at: '2026-11-22T10:00:00.000Z',
              delivered_at: '2026-11-22T10:00:01.000Z',
            },
          ],
          next_cursor: null,
        },
      },
    },
  })
  @ApiErrors('INVALID_REQUEST')
  list(@CurrentAccount() account: AuthenticatedAccount, @Query() query: EventsQueryDto): Promise<AccountEventPageDto> {
    return this.events.list(account.accountId, query.limit ?? 50, query.cursor);
  }
}
