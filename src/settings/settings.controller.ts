import { Body, Controller, Get, HttpCode, HttpStatus, Patch, Post, Req } from '@nestjs/common';
import type { Request } from 'express';
import { ApiBody, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthenticatedAccount } from '../auth/authenticated-account';
import { CurrentAccount, CustomerApi } from '../auth/customer-api.decorator';
import { ApiErrors, CUSTOMER_API_ERRORS } from '../common/api-errors.decorator';
import { SettingsDto, UpdateSettingsDto, WebhookSecretRotationDto } from './dto/settings.dto';
import { SettingsService } from './settings.service';

const CHECKS_TABLE =
  '| check | key | default | credits per call (default price) | fields it fills |\n' +
  '|---|---|---|---|---|\n' +
  '| Network Connection Status | `network_status` | on | 4 | status, carrier |\n' +
  '| Phone Number Type | `line_type` | off | 1 | line_type |\n' +
  '| Portability Status | `portability` | off | 2 | is_ported, carrier |\n\n' +
  'A call costs the sum of its enabled checks. Prices are set per deployment; `cost_per_call` is the cost here.';

const SETTINGS_EXAMPLES = {
  defaults: {
    summary: 'Default settings',
    value: { checks: { network_status: true, line_type: false, portability: false }, cost_per_call: 4, webhook_secret: 'whsec_9fQ2xL7mB4vT1cN8rZ3kW6yH0dJ5sPaE' },
  },
  allChecks: {
    summary: 'All three checks on',
    value: { checks: { network_status: true, line_type: true, portability: true }, cost_per_call: 7, webhook_secret: 'whsec_9fQ2xL7mB4vT1cN8rZ3kW6yH0dJ5sPaE' },
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
    summary: 'Turn checks on or off. Disabling all is allowed; /filter then answers 400.',
    description:
      'Send any subset of the three checks; the others keep their value. Unknown keys or non-boolean values: 400 ' +
      'INVALID_REQUEST. Answers the full settings, with the new `cost_per_call`.\n\n' +
      CHECKS_TABLE,
  })
  @ApiBody({
    type: UpdateSettingsDto,
    examples: {
      enableLineType: { summary: 'Turn on the Phone Number Type check', value: { checks: { line_type: true } } },
      allChecks: { summary: 'All three checks', value: { checks: { network_status: true, line_type: true, portability: true } } },
      networkOnly: { summary: 'Back to the default', value: { checks: { network_status: true, line_type: false, portability: false } } },
    },
  })
  @ApiOkResponse({ type: SettingsDto, examples: SETTINGS_EXAMPLES })
  @ApiErrors('INVALID_REQUEST', 'PAYLOAD_TOO_LARGE')
  update(@CurrentAccount() account: AuthenticatedAccount, @Body() body: UpdateSettingsDto): Promise<SettingsDto> {
    return this.settings.update(account.accountId, body.checks);
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
