import { Body, Controller, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { authenticatedAccount, CustomerApi } from '../auth/customer-api.decorator';
import { ApiErrors, CUSTOMER_API_ERRORS } from '../common/api-errors.decorator';
import { requestedMaxAge } from '../common/cache-control';
import { callerOf } from '../common/caller';
import { validateIdempotencyKey } from '../common/idempotency-key';
import { PhoneAnswerDto } from '../checks/phone-answer.dto';
import { FilterRequestDto } from './dto/filter.dto';
import { FilterService } from './filter.service';

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
      'Runs the checks enabled in the account settings (GET /api/v1/settings) and answers synchronously with six ' +
      'fields. Costs the sum of the enabled checks\' prices, `cost_per_call` of the settings (defaults: ' +
      '{{checks.default_prices}}). Country and numbering-plan validity are always computed, free. A number ' +
      'that is E.164 but not valid for its numbering plan is a 200 with `valid: false` and `status: "ABSENT"`, charged ' +
      'like any call. A 503 PROVIDER_UNAVAILABLE is refunded. Order of the checks: 401 → 429 → 400 → 402 → 503.\n\n' +
      'Sandbox and simulator test numbers, by their last four digits: 0000 ABSENT, 0001 UNDETERMINED, 0002 ported, ' +
      '0003 upstream failure (503, refunded), 0004 upstream timeout (503, refunded), 0005 CONNECTED and ABSENT in turn and ' +
      '0006 its operator in turn at each live lookup; anything else CONNECTED.\n\n' +
      'Freshness: answers are cached per number and check. `Cache-Control: no-cache` (or `max-age=0`) looks the enabled ' +
      'checks up live; `max-age=<seconds>` uses no cached answer older than that. A live answer refreshes the cache. ' +
      'The price is the same either way.',
  })
  @ApiHeader({
    name: 'Cache-Control',
    required: false,
    description:
      '`no-cache` or `max-age=0`: never from the cache; `max-age=<seconds>`: no cached answer older than that. Other directives are ignored; a malformed max-age is 400.',
    // No `example`: Swagger UI would pre-fill it, and every "Try it out" would send it unnoticed.
    schema: { type: 'string' },
  })
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    // No `example`: Swagger UI would pre-fill it, and a second "Try it out" with another number would get 409.
    description:
      'Optional. Retry safely: the same key and body within 24 h get the first answer again, charged once ' +
      '(1 to 255 printable characters, e.g. your order id). Use a new key for each new request; leave it empty to send none.',
    schema: { type: 'string', minLength: 1, maxLength: 255 },
  })
  @ApiBody({
    type: FilterRequestDto,
    examples: {
      minimal: { summary: 'A number in E.164', value: { phone: '+447400123456' } },
      withSource: { summary: 'With separators and a source', value: { phone: '+44 (7400) 123-456', source: 'website' } },
      absent: { summary: 'Test number: ABSENT (ends in 0000)', value: { phone: '+447400120000' } },
    },
  })
  @ApiOkResponse({
    type: PhoneAnswerDto,
    description: 'The six fields. `Idempotent-Replayed: true` when the answer is the replay of an earlier call with the same Idempotency-Key.',
    headers: { 'Idempotent-Replayed': { description: 'Present (`true`) on a replayed answer.', schema: { type: 'string', enum: ['true'] } } },
    examples: {
      connected: {
        summary: 'A live mobile number (all checks on)',
        value: { country: 'US', valid: true, status: 'CONNECTED', carrier: 'T-Mobile USA', line_type: 'MOBILE', is_ported: false },
      },
      ported: {
        summary: 'A ported number',
        value: { country: 'GB', valid: true, status: 'CONNECTED', carrier: 'Vodafone', line_type: 'MOBILE', is_ported: true },
      },
      defaultChecks: {
        summary: 'Default settings (network status only)',
        value: { country: 'GB', valid: true, status: 'CONNECTED', carrier: 'Three', line_type: 'UNKNOWN', is_ported: false },
      },
      invalid: {
        summary: 'Not valid for its numbering plan',
        value: { country: null, valid: false, status: 'ABSENT', carrier: null, line_type: 'UNKNOWN', is_ported: false },
      },
    },
  })
  @ApiErrors('INVALID_REQUEST', 'INSUFFICIENT_CREDITS', 'SPENDING_LIMIT_REACHED', 'IDEMPOTENCY_CONFLICT', 'PAYLOAD_TOO_LARGE', 'PROVIDER_UNAVAILABLE')
  async filter(
    // The request itself rather than one decorator per header and the account: every handler
    // parameter is resolved through its own chain of promises, and this is the hot path.
    @Req() request: Request,
    @Body() body: FilterRequestDto,
    @Res({ passthrough: true }) response: Response,
  ): Promise<string> {
    const account = authenticatedAccount(request);
    const freshness = { maxAgeSeconds: requestedMaxAge(request.header('cache-control')) };
    const outcome = await this.filters.filter(account, body, validateIdempotencyKey(request.header('idempotency-key')), freshness, callerOf(request, response));
    if (outcome.replayed) response.setHeader('Idempotent-Replayed', 'true');
    // The body as serialized once: a replay sends the same bytes, with the same Content-Type.
    response.type('application/json');
    return outcome.body;
  }
}
