import { Body, Controller, Get, Patch } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthenticatedAccount } from '../auth/authenticated-account';
import { CurrentAccount, CustomerApi } from '../auth/customer-api.decorator';
import { ApiErrors, CUSTOMER_API_ERRORS } from '../common/api-errors.decorator';
import { SettingsDto, UpdateSettingsDto } from './dto/settings.dto';
import { SettingsService } from './settings.service';

@ApiTags('settings')
@CustomerApi()
@ApiErrors(...CUSTOMER_API_ERRORS)
@Controller('api/v1/settings')
export class SettingsController {
  constructor(private readonly settings: SettingsService) {}

  @Get()
  @ApiOperation({ summary: 'Which checks run on every /filter call, and what a call costs.' })
  @ApiOkResponse({ type: SettingsDto })
  get(@CurrentAccount() account: AuthenticatedAccount): Promise<SettingsDto> {
    return this.settings.get(account.accountId);
  }

  @Patch()
  @ApiOperation({ summary: 'Turn checks on or off. Disabling all is allowed; /filter then answers 400.' })
  @ApiOkResponse({ type: SettingsDto })
  @ApiErrors('INVALID_REQUEST', 'PAYLOAD_TOO_LARGE')
  update(@CurrentAccount() account: AuthenticatedAccount, @Body() body: UpdateSettingsDto): Promise<SettingsDto> {
    return this.settings.update(account.accountId, body.checks);
  }
}
