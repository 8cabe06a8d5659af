import { Controller, Delete, Get, Header, Headers, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBody,
  ApiConsumes,
  ApiExtension,
  ApiExtraModels,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiProduces,
  ApiQuery,
  ApiTags,
} from '@nestjs/swagger';
import type { Request, Response } from 'express';
import type { AuthenticatedAccount } from '../auth/authenticated-account';
import { CurrentAccount, CustomerApi } from '../auth/customer-api.decorator';
import { ApiErrors, CUSTOMER_API_ERRORS } from '../common/api-errors.decorator';
import { AcceptsCsv } from '../common/body-error.guard';
import { callerOf } from '../common/caller';
import { validateIdempotencyKey } from '../common/idempotency-key';
import { CSV_BODY_EXTENSION } from '../common/swagger';
import { BulkBody, BulkBodyValidation } from './bulk-body';
import { BulkService } from './bulk.service';
import { BulkAcceptedDto, BulkEntriesDeletedDto, BulkEntryInputDto, BulkJobDto, BulkJobPageDto, BulkListQueryDto, BulkQuoteDto, BulkRequestDto } from './dto/bulk.dto';

const CSV_BODY = {
  description:
    'A header row naming a `phone` column and optionally a `reference` column (any order; other columns are ignored), then ' +
    'one entry per row, 1 to 1,000 rows, RFC 4180 quoting. `source`, `callback_url`, `max_age` and `risk` go in the query string. ' +
    'Errors name the line: `CSV line 7: …`.',
  example: 'phone,reference\r\n+14155552671,crm-contact-1842\r\n+44 7400 123456,crm-contact-1843\r\n',
};

const BODY_EXAMPLES = {
  strings: { summary: 'Numbers as strings', value: { phones: ['+14155552671', '+44 7400 123456', '12345'], source: 'crm-import' } },
  references: {
    summary: 'With your references, live lookups',
    value: { phones: [{ phone: '+14155552671', reference: 'crm-contact-1842' }, '+447400123456'], max_age: 0, callback_url: 'https://example.com/hooks/phone-filter' },
  },
};

/** The query parameters of a CSV upload (ignored with a JSON body, whose fields they are). */
function CsvQueryParameters(): MethodDecorator {
  return (target, key, descriptor) => {
    ApiQuery({ name: 'source', required: false, type: String, description: 'text/csv bodies only: as `source` of the JSON body.' })(target, key, descriptor);
    ApiQuery({ name: 'callback_url', required: false, type: String, description: 'text/csv bodies only: as `callback_url` of the JSON body.' })(target, key, descriptor);
    ApiQuery({ name: 'max_age', required: false, type: Number, description: 'text/csv bodies only: as `max_age` of the JSON body.' })(target, key, descriptor);
    ApiQuery({ name: 'risk', required: false, type: Boolean, description: 'text/csv bodies only: as `risk` of the JSON body (`true` or `false`).' })(target, key, descriptor);
  };
}

@ApiTags('bulk')
@ApiExtraModels(BulkEntryInputDto)
@CustomerApi()
@ApiErrors(...CUSTOMER_API_ERRORS)
@Controller('api/v1/filter/bulk')
export class BulkController {
  constructor(private readonly bulk: BulkService) {}

  @Post()
  @HttpCode(202)
  @AcceptsCsv()
  @ApiOperation({
    summary: 'Check up to 1,000 numbers in one job',
    description:
      'Reserves cost_per_call × entries that pass the E.164 syntax rule at once (402 and nothing charged if short), ' +
      'then looks the numbers up in the background. Failed lookups are refunded when the job completes; ' +
      'syntax errors are never charged. Poll GET /api/v1/filter/bulk/{id}, or pass callback_url (without it, the ' +
      'completion event goes to the account\'s webhook_url when set).\n\n' +
      'Entries are strings or `{ "phone", "reference" }`; references are echoed in the results and the CSV. The body ' +
      'may also be `text/csv` (see the request body). POST /api/v1/filter/bulk/quote tells the cost first.',
  })
  @ApiConsumes('application/json', 'text/csv')
  @ApiBody({ type: BulkRequestDto, examples: BODY_EXAMPLES })
  @ApiExtension(CSV_BODY_EXTENSION, CSV_BODY)
  @CsvQueryParameters()
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description:
      'Retry safely: the same key and body answer the same job again (202, same id, `Idempotent-Replayed: true`), reserved ' +
      'and charged once; the key with another body is 409 IDEMPOTENCY_CONFLICT. 1 to 255 printable characters.',
    schema: { type: 'string', minLength: 1, maxLength: 255, example: 'import-2026-11-22' },
  })
  @ApiAcceptedResponse({
    type: BulkAcceptedDto,
    headers: { 'Idempotent-Replayed': { description: 'Present (`true`) when the job is the one an earlier request with the same Idempotency-Key created.', schema: { type: 'string', enum: ['true'] } } },
  })
  @ApiErrors('INVALID_REQUEST', 'INSUFFICIENT_CREDITS', 'SPENDING_LIMIT_REACHED', 'IDEMPOTENCY_CONFLICT', 'PAYLOAD_TOO_LARGE')
  async submit(
    @CurrentAccount() account: AuthenticatedAccount,
    @BulkBody(BulkBodyValidation) body: BulkRequestDto,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Req() request: Request,
    @Res({ passthrough: true }) response: Response,
  ): Promise<BulkAcceptedDto> {
    const submission = await this.bulk.submit(account, body, validateIdempotencyKey(idempotencyKey), callerOf(request, response));
    if (submission.replayed) response.setHeader('Idempotent-Replayed', 'true');
    return submission.job;
  }

  @Post('quote')
  @HttpCode(200)
  @AcceptsCsv()
  @ApiOperation({
    summary: 'What a bulk job would cost, before running it',
    description:
      'Takes the same body as POST /api/v1/filter/bulk (JSON or text/csv) and answers what it would reserve now, against ' +
      'the balance and today\'s spending limit. Charges nothing and creates nothing.',
  })
  @ApiConsumes('application/json', 'text/csv')
  @ApiBody({ type: BulkRequestDto, examples: BODY_EXAMPLES })
  @ApiExtension(CSV_BODY_EXTENSION, CSV_BODY)
  @CsvQueryParameters()
  @ApiOkResponse({
    type: BulkQuoteDto,
    examples: {
      sufficient: { summary: 'Covered', value: { total: 3, billable: 2, invalid: 1, cost: 8, balance: 9996, sufficient: true } },
      short: { summary: 'Not covered', value: { total: 1000, billable: 1000, invalid: 0, cost: 4000, balance: 120, sufficient: false } },
    },
  })
  @ApiErrors('INVALID_REQUEST', 'PAYLOAD_TOO_LARGE')
  quote(@CurrentAccount() account: AuthenticatedAccount, @BulkBody(BulkBodyValidation) body: BulkRequestDto): Promise<BulkQuoteDto> {
    return this.bulk.quote(account, body);
  }

  @Get()
  @ApiOperation({ summary: 'List bulk jobs', description: "The account's bulk jobs, newest first (without results)." })
  @ApiOkResponse({ type: BulkJobPageDto })
  @ApiErrors('INVALID_REQUEST')
  list(@CurrentAccount() account: AuthenticatedAccount, @Query() query: BulkListQueryDto): Promise<BulkJobPageDto> {
    return this.bulk.list(account, query.limit ?? 20, query.cursor);
  }

  @Get(':id')
  @ApiOperation({ summary: 'Get a bulk job', description: 'A bulk job and its results, in input order.' })
  @ApiOkResponse({ type: BulkJobDto })
  @ApiErrors('NOT_FOUND')
  get(@CurrentAccount() account: AuthenticatedAccount, @Param('id') id: string): Promise<BulkJobDto> {
    return this.bulk.get(account, id);
  }

  @Delete(':id')
  @ApiOperation({
    summary: "Deletes a completed job's entries (numbers and results) now, before their retention period ends",
    description:
      'The job stays, with its counts and charges; its results are empty from then on. 400 INVALID_REQUEST while the job is queued or processing. ' +
      'Otherwise entries go RETENTION_BULK_ENTRIES_DAYS (default 30) after the job completed.',
  })
  @ApiOkResponse({ type: BulkEntriesDeletedDto })
  @ApiErrors('NOT_FOUND', 'INVALID_REQUEST')
  deleteEntries(@CurrentAccount() account: AuthenticatedAccount, @Param('id') id: string): Promise<BulkEntriesDeletedDto> {
    return this.bulk.deleteEntries(account, id);
  }

  @Get(':id/results.csv')
  @Header('Content-Type', 'text/csv; charset=utf-8')
  @ApiOperation({
    summary: "A completed job's results as CSV",
    description:
      'One row per entry, in input order. The columns are fixed when the job is submitted, from the checks then enabled: ' +
      '`phone`, `reference`, the six fields of the answer (always, as in the JSON results), the fields the job\'s other checks add, ' +
      '`error_code`, `error_message`, then per check of the job `<check>_provider` and `<check>_observed_at` (which provider ' +
      'answered it and when; empty when it did not answer the entry). With every check enabled: {{checks.csv_header}}. ' +
      'A job submitted with `risk: true` ends with `risk_score`, `risk_level`, `risk_recommendation` and `risk_reasons` (the reason codes, strongest first, separated by spaces). ' +
      'Text a spreadsheet would run as a formula is prefixed with an apostrophe. Until the job has completed: 409 NOT_READY with `Retry-After` (an unknown job is 404 NOT_FOUND).',
  })
  @ApiProduces('text/csv')
  @ApiOkResponse({
    schema: {
      type: 'string',
      // A job submitted with every check enabled.
      example:
        '{{checks.csv_header}}\r\n' +
        '+447400123456,crm-contact-1842,GB,true,CONNECTED,Three,MOBILE,false,,,hlr-lookups,2026-11-22T10:00:01.000Z,hlr-lookups,2026-11-22T10:00:01.000Z,backup,2026-11-22T10:00:01.200Z\r\n' +
        '12345,,,,,,,,INVALID_REQUEST,"phone must be in E.164 format, e.g. +14155552671.",,,,,,\r\n',
    },
  })
  @ApiErrors('NOT_FOUND', 'NOT_READY')
  async csv(@CurrentAccount() account: AuthenticatedAccount, @Param('id') id: string): Promise<string> {
    return this.bulk.csv(account, id);
  }
}
