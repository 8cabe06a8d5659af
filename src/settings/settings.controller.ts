import { Body, Controller, Get, HttpCode, HttpStatus, Patch, Post, Req } from '@nestjs/common';
import type { Request } from 'express';
import { ApiBody, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthenticatedAccount } from '../auth/authenticated-account';
import { CurrentAccount, CustomerApi } from '../auth/customer-api.decorator';
import { ApiErrors, CUSTOMER_API_ERRORS } from '../common/api-errors.decorator';
import { SettingsDto, UpdateSettingsDto, WebhookSecretRotationDto } from './dto/settings.dto';
import { SettingsService } from './settings.service';
import { BUILT_IN_CHECKS } from '../checks/built-in-checks';
import { checkOptionsOf } from '../checks/check-options';
import { DEFAULT_RISK_THRESHOLDS } from './risk-settings';

/*
 * Examples of the built-in checks, from their definitions; the checks table and the schemas come from
 * the registry (with any registered check) when the document is built.
 */

function pascalCase(name: string): string {
  return name.replace(/(^|_)([a-z])/g, (_, __, letter: string) => letter.toUpperCase());
}

/** The checks' table, written into the OpenAPI document from the registry (src/checks/checks-openapi.ts). */
const CHECKS_TABLE = '{{checks.table}}';

const DEFAULT_CHECKS = Object.fromEntries(BUILT_IN_CHECKS.map((check) => [check.name, check.defaultEnabled]));
const ALL_CHECKS = Object.fromEntries(BUILT_IN_CHECKS.map((check) => [check.name, true]));
const DEFAULT_COST = BUILT_IN_CHECKS.filter((check) => check.defaultEnabled).reduce((sum, check) => sum + check.price.default, 0);
const DEFAULT_CHECK_OPTIONS = checkOptionsOf(BUILT_IN_CHECKS, {});
const ALL_COST = BUILT_IN_CHECKS.reduce((sum, check) => sum + check.price.default, 0);
/** The first check that is off by default: the example of turning one on. */
const OFF_BY_DEFAULT = BUILT_IN_CHECKS.find((check) => !check.defaultEnabled)!;

const SETTINGS_EXAMPLES = {
  defaults: {
    summary: 'Default settings',
    value: {
      checks: DEFAULT_CHECKS,
      cost_per_call: DEFAULT_COST,
      webhook_secret: 'whsec_9fQ2xL7mB4vT1cN8rZ3kW6yH0dJ5sPaE',
      daily_credit_limit: null,
      low_balance_threshold: null,
      webhook_url: null,
      risk: { thresholds: DEFAULT_RISK_THRESHOLDS, destinations: {} },
      check_options: DEFAULT_CHECK_OPTIONS,
    },
  },
  allChecks: {
    summary: 'Every check on, a daily cap, a low-balance alert and a 72-hour SIM swap window',
    value: {
      checks: ALL_CHECKS,
      cost_per_call: ALL_COST,
      webhook_secret: 'whsec_9fQ2xL7mB4vT1cN8rZ3kW6yH0dJ5sPaE',
      daily_credit_limit: 5000,
      low_balance_threshold: 1000,
      webhook_url: 'https://example.com/hooks/phone-filter',
      risk: { thresholds: { ...DEFAULT_RISK_THRESHOLDS, block_score: 80 }, destinations: { CU: 0, '+88213': 100 } },
      check_options: { ...DEFAULT_CHECK_OPTIONS, sim_swap: { window_hours: 72 } },
    },
  },
};

@ApiTags('settings')
@CustomerApi()
@ApiErrors(...CUSTOMER_API_ERRORS)
@Controller('api/v1/settings')
export class SettingsController {
  constructor(private readonly settings: SettingsService) {}

  @Get()
  @ApiOperation({
    summary: 'Which checks run on every /filter call, and what a call costs.',
    description: CHECKS_TABLE,
  })
  @ApiOkResponse({ type: SettingsDto, examples: SETTINGS_EXAMPLES })
  get(@CurrentAccount() account: AuthenticatedAccount): Promise<SettingsDto> {
    return this.settings.get(account.accountId);
  }

  @Patch()
  @ApiOperation({
    summary: 'Turn checks on or off, set their options; set the daily spending cap, the low-balance alert and the webhook URL.',
    description:
      'Send any subset of the checks and of `daily_credit_limit`, `low_balance_threshold`, `webhook_url`, `risk` and `check_options` ' +
      '(null clears one); the rest keep their value. Unknown keys or wrong types: 400 INVALID_REQUEST. Disabling every ' +
      'check is allowed; /filter then answers 400. Answers the full settings, with the new `cost_per_call`.\n\n' +
      CHECKS_TABLE,
  })
  @ApiBody({
    type: UpdateSettingsDto,
    examples: {
      [`enable${pascalCase(OFF_BY_DEFAULT.name)}`]: { summary: `Turn on the ${OFF_BY_DEFAULT.title} check`, value: { checks: { [OFF_BY_DEFAULT.name]: true } } },
      allChecks: { summary: 'Every check', value: { checks: ALL_CHECKS } },
      networkOnly: { summary: 'Back to the default', value: { checks: DEFAULT_CHECKS } },
      controls: {
        summary: 'A daily cap of 5,000 credits and an alert below 1,000',
        value: { daily_credit_limit: 5000, low_balance_threshold: 1000, webhook_url: 'https://example.com/hooks/phone-filter' },
      },
      clearCap: { summary: 'No daily cap', value: { daily_credit_limit: null } },
      simSwapWindow: { summary: 'SIM swap: a change within 72 hours counts (docs/api.md "SIM swap")', value: { check_options: { sim_swap: { window_hours: 72 } } } },
      risk: { summary: 'Tune the risk verdict (docs/sms-pumping.md)', value: { risk: { thresholds: { block_score: 80 }, destinations: { CU: 0, '+88213': 100 } } } },
    },
  })
  @ApiOkResponse({ type: SettingsDto, examples: SETTINGS_EXAMPLES })
  @ApiErrors('INVALID_REQUEST', 'PAYLOAD_TOO_LARGE')
  update(@CurrentAccount() account: AuthenticatedAccount, @Body() body: UpdateSettingsDto): Promise<SettingsDto> {
    return this.settings.update(account.accountId, body);
  }

  @Post('webhook-secret')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({
    summary: 'Rotate the webhook secret: a new one now, the old one still valid for 24 hours.',
    description:
      'Answers the new `webhook_secret` (shown by GET /api/v1/settings from now on) and when the previous one stops ' +
      'signing. During those 24 hours every callback carries both signatures in `X-Signature`, comma-separated, the ' +
      'new secret\'s first: `X-Signature: <hex HMAC-SHA256(new, "<timestamp>.<body>")>,<hex HMAC-SHA256(old, ...)>`. ' +
      'A receiver accepts the callback when any of them matches the secret it holds, so it can switch to the new ' +
      'secret at any time within the grace period. Rotating again ends the older secret at once, so a retried ' +
      'rotation (after a timeout, say) leaves only the last two valid: use the secret of the latest answer, or read it ' +
      'with GET /api/v1/settings. Each rotation is in the admin audit trail (the key that asked, never a secret). No body.',
  })
  @ApiOkResponse({ type: WebhookSecretRotationDto })
  rotateWebhookSecret(@CurrentAccount() account: AuthenticatedAccount, @Req() request: Request): Promise<WebhookSecretRotationDto> {
    // The actor names the API key by its id: who asked, without any secret.
    return this.settings.rotateWebhookSecret(account.accountId, { name: `api-key:${account.keyId}`, requestId: request.requestId });
  }
}
