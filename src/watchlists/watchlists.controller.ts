import { Body, Controller, Delete, Get, Headers, HttpCode, Param, Patch, Post, Query, Res } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBody, ApiCreatedResponse, ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import type { AuthenticatedAccount } from '../auth/authenticated-account';
import { CurrentAccount, CustomerApi } from '../auth/customer-api.decorator';
import { ApiErrors, CUSTOMER_API_ERRORS } from '../common/api-errors.decorator';
import { IdempotencyService } from '../idempotency/idempotency.service';
import {
  CreateWatchlistDto, RoundStartedDto, UpdateWatchlistDto, WatchlistChangePageDto, WatchlistChangesQueryDto, WatchlistCreatedDto, WatchlistDeletedDto, WatchlistDto,
  WatchlistEntriesQueryDto, WatchlistListQueryDto, WatchlistPageDto, WatchlistSummaryDto,
} from './dto/watchlists.dto';
import { WatchlistsService } from './watchlists.service';

@ApiTags('watchlists')
@CustomerApi()
@ApiErrors(...CUSTOMER_API_ERRORS)
@Controller('api/v1/watchlists')
export class WatchlistsController {
  constructor(private readonly watchlists: WatchlistsService) {}

  @Post()
  @HttpCode(201)
  @ApiOperation({
    summary: 'Watch up to 10,000 numbers',
    description:
      'Every number is re-checked live (never from the cache) each interval with the account\'s checks, charged like any lookup ' +
      '(one CHARGE per number, failed lookups refunded). The first round runs at once and records the baseline; later rounds report ' +
      'changes of {{checks.watched_fields}}. 402 when the balance cannot cover the first round; 400 past the ' +
      "plan's limit of watched numbers (10,000 by default, across the account's watchlists).",
  })
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description: 'Retry safely: the same key and body within 24 h get the first answer again, and create one watchlist.',
    schema: { type: 'string', minLength: 1, maxLength: 255, example: 'crm-sync-2026-11-23' },
  })
  @ApiBody({
    type: CreateWatchlistDto,
    examples: {
      minimal: { summary: 'Weekly, no callback', value: { phones: ['+447400123456', '+14155552671'], interval: 'weekly' } },
      tryIt: {
        summary: 'Test numbers that change at each round, with a callback',
        value: { name: 'try it', phones: ['+447400120005', '+447400120006'], interval: 'daily', callback_url: 'https://example.com/hooks/watchlist', references: ['contact-1', 'contact-2'] },
      },
    },
  })
  @ApiCreatedResponse({ type: WatchlistCreatedDto })
  @ApiErrors('INVALID_REQUEST', 'INSUFFICIENT_CREDITS', 'IDEMPOTENCY_CONFLICT', 'PAYLOAD_TOO_LARGE')
  async create(
    @CurrentAccount() account: AuthenticatedAccount,
    @Body() body: CreateWatchlistDto,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Res({ passthrough: true }) response: Response,
  ): Promise<string> {
    const outcome = await this.watchlists.create(account, body, IdempotencyService.validateKey(idempotencyKey));
    if (outcome.replayed) response.setHeader('Idempotent-Replayed', 'true');
    response.type('application/json');
    return outcome.body;
  }

  @Get()
  @ApiOperation({ summary: 'List watchlists', description: "The account's watchlists, newest first, each with its last round." })
  @ApiOkResponse({ type: WatchlistPageDto })
  @ApiErrors('INVALID_REQUEST')
  list(@CurrentAccount() account: AuthenticatedAccount, @Query() query: WatchlistListQueryDto): Promise<WatchlistPageDto> {
    return this.watchlists.list(account, query.limit ?? 20, query.cursor);
  }

  @Get(':id')
  @ApiOperation({ summary: 'Get a watchlist', description: 'A watchlist and a page of its numbers, each with its last answer and checked_at.' })
  @ApiOkResponse({ type: WatchlistDto })
  @ApiErrors('INVALID_REQUEST', 'NOT_FOUND')
  get(@CurrentAccount() account: AuthenticatedAccount, @Param('id') id: string, @Query() query: WatchlistEntriesQueryDto): Promise<WatchlistDto> {
    return this.watchlists.get(account, id, query.limit ?? 100, query.cursor);
  }

  @Patch(':id')
  @ApiOperation({ summary: 'Change a watchlist', description: 'Rename, change the interval or callback, pause or resume, add or remove numbers.' })
  @ApiBody({
    type: UpdateWatchlistDto,
    examples: {
      resume: { summary: 'Resume (after a top-up)', value: { paused: false } },
      edit: { summary: 'Add and remove numbers', value: { add: ['+447400120006'], remove: ['+447400123456'] } },
    },
  })
  @ApiOkResponse({ type: WatchlistSummaryDto })
  @ApiErrors('INVALID_REQUEST', 'NOT_FOUND')
  update(@CurrentAccount() account: AuthenticatedAccount, @Param('id') id: string, @Body() body: UpdateWatchlistDto): Promise<WatchlistSummaryDto> {
    return this.watchlists.update(account, id, body);
  }

  @Delete(':id')
  @ApiOperation({ summary: 'Delete a watchlist', description: 'Stop watching: no further round runs (charged rounds stay in the ledger); the id answers 404 from then on.' })
  @ApiOkResponse({ type: WatchlistDeletedDto })
  @ApiErrors('NOT_FOUND')
  async remove(@CurrentAccount() account: AuthenticatedAccount, @Param('id') id: string): Promise<WatchlistDeletedDto> {
    await this.watchlists.remove(account, id);
    return { id, status: 'deleted' };
  }

  @Post(':id/check')
  @HttpCode(202)
  @ApiOperation({
    summary: 'Run a round now',
    description: 'Billed like a scheduled round (402 when the balance cannot cover it). A round already running is answered, not started again.',
  })
  @ApiAcceptedResponse({ type: RoundStartedDto })
  @ApiErrors('INVALID_REQUEST', 'INSUFFICIENT_CREDITS', 'NOT_FOUND')
  check(@CurrentAccount() account: AuthenticatedAccount, @Param('id') id: string): Promise<RoundStartedDto> {
    return this.watchlists.checkNow(account, id);
  }

  @Get(':id/changes')
  @ApiOperation({ summary: "A watchlist's changes", description: 'The changes found, newest first: number, field, before, after, detected_at.' })
  @ApiOkResponse({ type: WatchlistChangePageDto })
  @ApiErrors('INVALID_REQUEST', 'NOT_FOUND')
  changes(@CurrentAccount() account: AuthenticatedAccount, @Param('id') id: string, @Query() query: WatchlistChangesQueryDto): Promise<WatchlistChangePageDto> {
    return this.watchlists.changes(account, id, query.since, query.limit ?? 100, query.cursor);
  }
}
