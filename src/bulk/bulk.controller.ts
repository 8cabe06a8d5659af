import { Body, Controller, Get, Header, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiAcceptedResponse, ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { AuthenticatedAccount } from '../auth/authenticated-account';
import { CurrentAccount, CustomerApi } from '../auth/customer-api.decorator';
import { ApiErrors, CUSTOMER_API_ERRORS } from '../common/api-errors.decorator';
import { BulkService } from './bulk.service';
import { BulkAcceptedDto, BulkJobDto, BulkJobPageDto, BulkListQueryDto, BulkRequestDto } from './dto/bulk.dto';

@ApiTags('bulk')
@CustomerApi()
@ApiErrors(...CUSTOMER_API_ERRORS)
@Controller('api/v1/filter/bulk')
export class BulkController {
  constructor(private readonly bulk: BulkService) {}

  @Post()
  @HttpCode(202)
  @ApiOperation({
    summary: 'Check up to 1,000 numbers in one job',
    description:
      'Reserves cost_per_call × entries that pass the E.164 syntax rule at once (402 and nothing charged if short), ' +
      'then looks the numbers up in the background. Failed lookups are refunded when the job completes; ' +
      'syntax errors are never charged. Poll GET /api/v1/filter/bulk/{id}, or pass callback_url.',
  })
  @ApiAcceptedResponse({ type: BulkAcceptedDto })
  @ApiErrors('INVALID_REQUEST', 'INSUFFICIENT_CREDITS', 'PAYLOAD_TOO_LARGE')
  submit(@CurrentAccount() account: AuthenticatedAccount, @Body() body: BulkRequestDto): Promise<BulkAcceptedDto> {
    return this.bulk.submit(account, body);
  }

  @Get()
  @ApiOperation({ summary: "The account's bulk jobs, newest first (without results)." })
  @ApiOkResponse({ type: BulkJobPageDto })
  @ApiErrors('INVALID_REQUEST')
  list(@CurrentAccount() account: AuthenticatedAccount, @Query() query: BulkListQueryDto): Promise<BulkJobPageDto> {
    return this.bulk.list(account, query.limit ?? 20, query.cursor);
  }

  @Get(':id')
  @ApiOperation({ summary: 'A bulk job and its results, in input order.' })
  @ApiOkResponse({ type: BulkJobDto })
  @ApiErrors('NOT_FOUND')
  get(@CurrentAccount() account: AuthenticatedAccount, @Param('id') id: string): Promise<BulkJobDto> {
    return this.bulk.get(account, id);
  }

  @Get(':id/results.csv')
  @Header('Content-Type', 'text/csv; charset=utf-8')
  @ApiOperation({
    summary: "A completed job's results as CSV",
    description:
      'Columns phone,country,valid,status,carrier,line_type,is_ported,error_code,error_message, in input order. ' +
      'Text a spreadsheet would run as a formula is prefixed with an apostrophe. 404 NOT_FOUND until the job has completed.',
  })
  @ApiProduces('text/csv')
  @ApiOkResponse({
    schema: {
      type: 'string',
      example:
        'phone,country,valid,status,carrier,line_type,is_ported,error_code,error_message\r\n' +
        '+447400123456,GB,true,CONNECTED,Three,MOBILE,false,,\r\n12345,,,,,,,INVALID_REQUEST,"phone must be in E.164 format, e.g. +14155552671."\r\n',
    },
  })
  @ApiErrors('NOT_FOUND')
  async csv(@CurrentAccount() account: AuthenticatedAccount, @Param('id') id: string): Promise<string> {
    return this.bulk.csv(account, id);
  }
}
