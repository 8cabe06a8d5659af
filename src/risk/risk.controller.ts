import { Body, Controller, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import type { AuthenticatedAccount } from '../auth/authenticated-account';
import { authenticatedAccount, CurrentAccount, CustomerApi } from '../auth/customer-api.decorator';
import { ApiErrors, CUSTOMER_API_ERRORS } from '../common/api-errors.decorator';
import { callerOf } from '../common/caller';
import { validateIdempotencyKey } from '../common/idempotency-key';
import { RiskFeedbackAnswerDto, RiskFeedbackDto, RiskRequestDto, RiskVerdictDto } from './dto/risk.dto';
import { RiskService } from './risk.service';

@ApiTags('risk')
@CustomerApi()
@ApiErrors(...CUSTOMER_API_ERRORS)
@Controller('api/v1/risk')
export class RiskController {
  constructor(private readonly risk: RiskService) {}

  @Post()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Risk verdict before sending a one-time code (SMS pumping, SIM swap)',
    description:
      'Call it before texting a code to a number: answers a score (0-100), a level, a recommendation (`allow`, `flag`, ' +
      '`block`) and the reasons, each a stable code with a sentence saying why. Signals: the numbering plan\'s type ' +
      '(premium rate, shared cost, VoIP...), the destination risk table, how many distinct numbers of the same range ' +
      'this account (per source) and the whole service asked lately, runs of near-consecutive numbers, numbers and ' +
      'countries per IP and per source, verification rates from POST /api/v1/risk/feedback, and the liveness and SIM ' +
      'swap answers the lookup cache already holds (no provider is asked). Each call counts as an ask in those counters. ' +
      'Thresholds and destination adjustments: PATCH /api/v1/settings `risk`. Costs {{checks.risk_verdict_price}} credits (refunded ' +
      'when no verdict could be made: 503). Order of the checks: 401 → 429 → 400 → 402 → 503. docs/sms-pumping.md.',
  })
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description:
      'Optional. Retry safely: the same key and body within 24 h get the first verdict again, charged once (1 to 255 printable ' +
      'characters). Use a new key for each new request; leave it empty to send none.',
    schema: { type: 'string', minLength: 1, maxLength: 255 },
  })
  @ApiBody({
    type: RiskRequestDto,
    examples: {
      signup: { summary: 'Before a sign-up code', value: { phone: '+447400123456', source: 'signup-form', event: 'signup', ip: '203.0.113.7' } },
      login: { summary: 'Before a login code (SIM swap weighs most)', value: { phone: '+447400123456', event: 'login' } },
      premium: { summary: 'A premium-rate number', value: { phone: '+449098790000' } },
    },
  })
  @ApiOkResponse({
    type: RiskVerdictDto,
    description: 'The verdict. `Idempotent-Replayed: true` when it is the replay of an earlier call with the same Idempotency-Key.',
    headers: { 'Idempotent-Replayed': { description: 'Present (`true`) on a replayed answer.', schema: { type: 'string', enum: ['true'] } } },
    examples: {
      allow: { summary: 'Nothing found', value: { score: 0, level: 'low', recommendation: 'allow', reasons: [] } },
      pumping: {
        summary: 'A run through a range',
        value: {
          score: 85,
          level: 'high',
          recommendation: 'block',
          reasons: [
            {
              code: 'SEQUENTIAL_NUMBERS',
              message: '4 distinct numbers within 30 consecutive numbers of this one (around +44740012345…) were asked within an hour (threshold 3): a script counting through a range.',
            },
            { code: 'RANGE_VELOCITY', message: 'Asked for 4 distinct numbers of the 100-number block +4474001234… within an hour (threshold 3): pumping walks through number ranges.' },
          ],
        },
      },
    },
  })
  @ApiErrors('INVALID_REQUEST', 'INSUFFICIENT_CREDITS', 'SPENDING_LIMIT_REACHED', 'IDEMPOTENCY_CONFLICT', 'PAYLOAD_TOO_LARGE')
  async verdict(@Req() request: Request, @Body() body: RiskRequestDto, @Res({ passthrough: true }) response: Response): Promise<string> {
    const outcome = await this.risk.verdict(authenticatedAccount(request), body, validateIdempotencyKey(request.header('idempotency-key')), callerOf(request, response));
    if (outcome.replayed) response.setHeader('Idempotent-Replayed', 'true');
    response.type('application/json');
    return outcome.body;
  }

  @Post('feedback')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Say whether the code sent after a verdict was verified',
    description:
      'Free. For a number of an earlier POST /api/v1/risk of this account (its last verdict within 24 h; otherwise 404 ' +
      'NOT_FOUND). `verified: true` when the user entered the code, `false` when it expired unused (or send nothing: a ' +
      'verdict without feedback counts as not verified after the grace, settings `risk.thresholds.verification_grace_seconds`). ' +
      'Feeds the verification rates of the number\'s range, country, source and IP (LOW_VERIFICATION_RATE).',
  })
  @ApiBody({ type: RiskFeedbackDto, examples: { verified: { summary: 'The code was entered', value: { phone: '+447400123456', verified: true } } } })
  @ApiOkResponse({ type: RiskFeedbackAnswerDto })
  @ApiErrors('INVALID_REQUEST', 'NOT_FOUND', 'PAYLOAD_TOO_LARGE')
  feedback(@CurrentAccount() account: AuthenticatedAccount, @Body() body: RiskFeedbackDto): Promise<RiskFeedbackAnswerDto> {
    return this.risk.feedback(account, body);
  }
}
